package imaging

import (
	"bytes"
	"context"
	"image"
	"image/draw"
	"image/gif"
	"image/jpeg"
	"image/png"

	"github.com/nfnt/resize"
	"golang.org/x/image/tiff"
	"golang.org/x/image/webp"
)

// goEngine is the pure Go engine. It decodes the whole image (Go's JPEG
// decoder cannot shrink on load), so it is slower and needs more memory than
// libvips on large photos, but it builds anywhere.
type goEngine struct{ cfg Config }

func (e *goEngine) Name() string { return EngineGo }

func (e *goEngine) Process(ctx context.Context, data []byte, opt Options) (*Result, error) {
	return process(ctx, e.cfg, data, opt, e)
}

func (e *goEngine) Thumbnail(ctx context.Context, data []byte, opt Options) (Output, error) {
	return thumbnail(ctx, e.cfg, data, opt, e)
}

// thumb decodes the whole image, as derive does, and resizes it straight
// to the thumbnail.
func (e *goEngine) thumb(ctx context.Context, data []byte, h header, orientation int, opt Options) (Output, error) {
	img, err := decodeGo(h.format, data)
	if err != nil {
		return Output{}, err
	}
	if err := ctx.Err(); err != nil {
		return Output{}, err
	}
	b := img.Bounds()
	tw, th := fitSize(b.Dx(), b.Dy(), opt.ThumbSize)
	return encodeOutput(orient(flatten(resizeTo(img, tw, th)), orientation), opt.ThumbQuality)
}

func (e *goEngine) derive(ctx context.Context, data []byte, h header, orientation int, opt Options) (*derived, error) {
	img, err := decodeGo(h.format, data)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b := img.Bounds()
	pw, ph := fitSize(b.Dx(), b.Dy(), opt.PreviewSize)
	preview := orient(flatten(resizeTo(img, pw, ph)), orientation)
	img = nil // let the full-size image go before encoding
	d := &derived{width: h.width, height: h.height}
	if orientation >= 5 {
		d.width, d.height = h.height, h.width
	}
	if d.preview, err = encodeOutput(preview, opt.PreviewQuality); err != nil {
		return nil, err
	}
	d.small = fitRGBA(preview, opt.ThumbSize)
	if d.thumb, err = encodeOutput(d.small, opt.ThumbQuality); err != nil {
		return nil, err
	}
	d.mid = fitRGBA(preview, analysisSize)
	return d, ctx.Err()
}

func (e *goEngine) Render(ctx context.Context, data []byte, opt RenderOptions) ([]byte, error) {
	h, err := inspectFor(data, e.cfg, e)
	if err != nil {
		return nil, err
	}
	meta, _ := readMetadata(ctx, h)
	img, err := decodeGo(h.format, data)
	if err != nil {
		return nil, err
	}
	o := meta.Orientation
	b := img.Bounds()
	ow, oh := b.Dx(), b.Dy() // oriented size
	if o >= 5 {
		ow, oh = oh, ow
	}
	tw, th, crop := renderSize(ow, oh, opt)
	if int64(tw)*int64(th) > e.cfg.MaxPixels {
		return nil, newError(CodeTooManyPixels, nil, "a %d×%d render is more than %d pixels", tw, th, e.cfg.MaxPixels)
	}
	if o >= 5 { // crop and resize in the stored orientation
		tw, th = th, tw
	}
	if crop {
		// Crop the source to the box's shape first, so an extreme aspect
		// never scales the whole image up to cover the box.
		img = centreCrop(img, tw, th)
	}
	out := orient(flatten(resizeTo(img, tw, th)), o)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return encodeJPEG(out, renderQuality(opt))
}

// renderSize returns, for an oriented w×h image, the size to render and
// whether the source is first cropped to that size's shape.
func renderSize(w, h int, opt RenderOptions) (tw, th int, crop bool) {
	W, H := opt.Width, opt.Height
	switch {
	case W <= 0 && H <= 0:
		return w, h, false
	case opt.Crop && W > 0 && H > 0:
		s := min(1, float64(w)/float64(W), float64(h)/float64(H))
		return max(1, int(float64(W)*s+0.5)), max(1, int(float64(H)*s+0.5)), true
	}
	if W <= 0 {
		W = w
	}
	if H <= 0 {
		H = h
	}
	s := min(1, float64(W)/float64(w), float64(H)/float64(h))
	return max(1, int(float64(w)*s+0.5)), max(1, int(float64(h)*s+0.5)), false
}

// centreCrop returns the largest centred part of img with the aspect of a
// w×h box.
func centreCrop(img image.Image, w, h int) image.Image {
	b := img.Bounds()
	r := CentredBox(b, w, h)
	if s, ok := img.(interface {
		SubImage(image.Rectangle) image.Image
	}); ok {
		return s.SubImage(r)
	}
	return copyRGBA(flatten(img).SubImage(r.Sub(b.Min)))
}

// CentredBox is the largest rectangle centred in b with the aspect of w×h:
// what a preset that fills a box keeps of a photo.
func CentredBox(b image.Rectangle, w, h int) image.Rectangle {
	sw, sh := b.Dx(), b.Dy()
	if int64(sw)*int64(h) > int64(sh)*int64(w) { // wider than the box
		sw = max(1, int((int64(sh)*int64(w)+int64(h)/2)/int64(h)))
	} else {
		sh = max(1, int((int64(sw)*int64(h)+int64(w)/2)/int64(w)))
	}
	x0, y0 := b.Min.X+(b.Dx()-sw)/2, b.Min.Y+(b.Dy()-sh)/2
	return image.Rect(x0, y0, x0+sw, y0+sh)
}

func renderQuality(opt RenderOptions) int {
	if opt.Quality <= 0 || opt.Quality > 100 {
		return 90
	}
	return opt.Quality
}

func decodeGo(f Format, data []byte) (image.Image, error) {
	r := bytes.NewReader(data)
	var (
		img image.Image
		err error
	)
	switch f {
	case JPEG:
		img, err = jpeg.Decode(r)
	case PNG:
		img, err = png.Decode(r)
	case GIF:
		img, err = gif.Decode(r) // the first frame
	case WebP:
		img, err = webp.Decode(r)
	case TIFF:
		img, err = tiff.Decode(r)
	}
	if err != nil {
		return nil, newError(CodeCorruptImage, err, "the %s image cannot be decoded", f)
	}
	return img, nil
}

// resizeTo scales img to w×h. Lanczos3 keeps downscaled photos crisp; nfnt
// widens the kernel with the scale factor, so large reductions average
// properly instead of skipping pixels.
func resizeTo(img image.Image, w, h int) image.Image {
	b := img.Bounds()
	if b.Dx() == w && b.Dy() == h {
		return img
	}
	switch img.(type) {
	case *image.YCbCr, *image.RGBA, *image.NRGBA, *image.Gray, *image.Gray16, *image.RGBA64, *image.NRGBA64:
	default:
		// nfnt reads other types (CMYK, paletted) through At, pixel by pixel;
		// converting once is faster.
		img = flatten(img)
	}
	return resize.Resize(uint(w), uint(h), img, resize.Lanczos3)
}

// fitRGBA scales an opaque RGBA image to a long edge of at most long.
func fitRGBA(img *image.RGBA, long int) *image.RGBA {
	w, h := fitSize(img.Rect.Dx(), img.Rect.Dy(), long)
	if w == img.Rect.Dx() && h == img.Rect.Dy() {
		return img
	}
	return resize.Resize(uint(w), uint(h), img, resize.Lanczos3).(*image.RGBA)
}

// flatten converts any image to opaque RGBA at the origin, compositing
// transparency onto white. Go's colour models do the conversions, including
// Adobe CMYK and 16-bit samples.
func flatten(img image.Image) *image.RGBA {
	b := img.Bounds()
	if rgba, ok := img.(*image.RGBA); ok && rgba.Opaque() && b.Min == (image.Point{}) {
		return rgba
	}
	dst := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	if o, ok := img.(interface{ Opaque() bool }); ok && o.Opaque() {
		draw.Draw(dst, dst.Rect, img, b.Min, draw.Src)
		return dst
	}
	draw.Draw(dst, dst.Rect, image.White, image.Point{}, draw.Src)
	draw.Draw(dst, dst.Rect, img, b.Min, draw.Over)
	return dst
}

func copyRGBA(img image.Image) *image.RGBA {
	b := img.Bounds()
	dst := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(dst, dst.Rect, img, b.Min, draw.Src)
	return dst
}

// orient applies an EXIF orientation (1-8), so the result is upright.
func orient(src *image.RGBA, o int) *image.RGBA {
	if o <= 1 || o > 8 {
		return src
	}
	w, h := src.Rect.Dx(), src.Rect.Dy()
	dw, dh := w, h
	if o >= 5 {
		dw, dh = h, w
	}
	dst := image.NewRGBA(image.Rect(0, 0, dw, dh))
	for dy := 0; dy < dh; dy++ {
		for dx := 0; dx < dw; dx++ {
			var sx, sy int
			switch o {
			case 2: // mirrored
				sx, sy = w-1-dx, dy
			case 3: // upside down
				sx, sy = w-1-dx, h-1-dy
			case 4: // mirrored upside down
				sx, sy = dx, h-1-dy
			case 5: // transposed
				sx, sy = dy, dx
			case 6: // stored turned left: turn right
				sx, sy = dy, h-1-dx
			case 7: // transversed
				sx, sy = w-1-dy, h-1-dx
			case 8: // stored turned right: turn left
				sx, sy = w-1-dy, dx
			}
			si := sy*src.Stride + 4*sx
			di := dy*dst.Stride + 4*dx
			copy(dst.Pix[di:di+4], src.Pix[si:si+4])
		}
	}
	return dst
}

func encodeJPEG(img image.Image, quality int) ([]byte, error) {
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: quality}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func encodeOutput(img *image.RGBA, quality int) (Output, error) {
	data, err := encodeJPEG(img, quality)
	return Output{Data: data, ContentType: contentTypeJPEG, Width: img.Rect.Dx(), Height: img.Rect.Dy()}, err
}
