package imaging

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"testing"

	"github.com/nfnt/resize"
)

// TestWideGamutToSRGB checks that a Display P3 photo's preview is converted
// to sRGB: its colours come out measurably more saturated than a conversion
// that ignores the profile (Go's decoder, which reads the numbers as sRGB).
func TestWideGamutToSRGB(t *testing.T) {
	e := libvips(t, "colour profiles are converted by the libvips engine")
	for _, file := range []string{"icc/iphone13mini-displayp3-gainmap.jpg"} {
		data := readFormat(t, file)
		r, err := e.Process(context.Background(), data, Options{})
		if err != nil {
			t.Fatal(err)
		}
		preview := decodeJPEG(t, r.Preview.Data)
		plain, err := jpeg.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		b := preview.Bounds()
		ignoring := resize.Resize(uint(b.Dx()), uint(b.Dy()), plain, resize.Lanczos3)
		got, base := meanSaturation(preview), meanSaturation(ignoring)
		t.Logf("%s: mean saturation %.4f converted, %.4f ignoring the profile", file, got, base)
		if got < base*1.03 {
			t.Errorf("%s: preview saturation %.4f is not above %.4f (profile ignored)", file, got, base)
		}
	}
}

// TestOutputsCarryNoProfile checks that no derived file keeps a colour
// profile: they are sRGB, which is what untagged JPEG means.
func TestOutputsCarryNoProfile(t *testing.T) {
	e := libvips(t, "the formats with profiles are read by the libvips engine")
	for _, file := range []string{"icc/iphone13mini-displayp3-gainmap.jpg", "icc/cmyk-swop-icc.jpg", "heic/iphone13pro-portrait-depthmap-p3.heic", "avif/pixel4a-paris-icc-exif-xmp.avif", "jxl/bicycles-codestream.jxl"} {
		r, err := e.Process(context.Background(), readFormat(t, file), Options{})
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, o := range []Output{r.Preview, r.Thumbnail} {
			if bytes.Contains(o.Data, []byte("ICC_PROFILE")) {
				t.Errorf("%s: an output keeps an ICC profile", file)
			}
			if _, ok := decodeJPEG(t, o.Data).(*image.YCbCr); !ok {
				t.Errorf("%s: an output is not a colour JPEG", file)
			}
		}
	}
}

// meanSaturation is the mean of max(R,G,B)-min(R,G,B), 0 to 1.
func meanSaturation(img image.Image) float64 {
	b := img.Bounds()
	var sum float64
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			sum += float64(max(r, g, bl)-min(r, g, bl)) / 65535
		}
	}
	return sum / float64(b.Dx()*b.Dy())
}
