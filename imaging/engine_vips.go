//go:build cgo

package imaging

import (
	"context"
	"fmt"
	"image"
	"log/slog"
	"strings"
	"sync"

	"github.com/davidbyttow/govips/v2/vips"
)

// DefaultEngine is the engine New picks for "": libvips when built with cgo.
const DefaultEngine = EngineVips

var (
	vipsOnce    sync.Once
	vipsStarted bool
	vipsMu      sync.Mutex
)

// vipsEngine does the pixel work in libvips. Orientation, colour
// conversion (CMYK, 16-bit, grey) and shrink-on-load are libvips' own.
type vipsEngine struct{ cfg Config }

func newVips(cfg Config) (Engine, error) {
	vipsOnce.Do(func() {
		// govips logs through the standard logger at info level unless
		// told otherwise; keep only warnings and send them to slog.
		vips.LoggingSettings(vipsLog, vips.LogLevelWarning)
		vips.Startup(&vips.Config{
			ConcurrencyLevel: cfg.VipsConcurrency,
			MaxCacheMem:      cfg.VipsCacheMB << 20,
			MaxCacheSize:     cacheOps(cfg.VipsCacheMB),
			MaxCacheFiles:    0,
		})
		vipsMu.Lock()
		vipsStarted = true
		vipsMu.Unlock()
	})
	return &vipsEngine{cfg: cfg}, nil
}

func cacheOps(mb int) int {
	if mb <= 0 {
		return 0
	}
	return 100
}

// vipsLog sends libvips messages to slog. libvips warnings describe quirks
// of the input ("unknown EXIF resolution unit") on many ordinary photos;
// the ones that matter come back as errors because loads use fail=true, so
// warnings are kept at debug level.
func vipsLog(domain string, level vips.LogLevel, msg string) {
	switch level {
	case vips.LogLevelError, vips.LogLevelCritical:
		slog.Error("libvips", "domain", domain, "msg", msg)
	default:
		slog.Debug("libvips", "domain", domain, "msg", msg)
	}
}

// Shutdown stops libvips if a "vips" engine started it. Call it once, when
// the process ends: libvips cannot be started again afterwards.
func Shutdown() {
	vipsMu.Lock()
	defer vipsMu.Unlock()
	if vipsStarted {
		vips.Shutdown()
		vipsStarted = false
	}
}

func (e *vipsEngine) Name() string { return EngineVips }

func (e *vipsEngine) Process(ctx context.Context, data []byte, opt Options) (*Result, error) {
	return process(ctx, e.cfg, data, opt, e)
}

func (e *vipsEngine) Thumbnail(ctx context.Context, data []byte, opt Options) (Output, error) {
	return thumbnail(ctx, e.cfg, data, opt, e)
}

// thumb decodes only what the thumbnail needs: a plain JPEG at 1/8 in the
// DCT (jpegScaled), a raw's embedded JPEG when it covers the thumbnail,
// anything else through libvips' thumbnail loader at the thumbnail's size
// (which shrinks on load, and reads a HEIF's own thumbnail when it is
// large enough).
func (e *vipsEngine) thumb(ctx context.Context, data []byte, h header, orientation int, opt Options) (Output, error) {
	small := opt
	small.PreviewSize = opt.ThumbSize
	src, turn := data, 1
	if h.format.IsRaw() {
		var err error
		if src, turn, h.width, h.height, err = rawSource(data, h, small); err != nil {
			return Output{}, err
		}
	}
	var (
		pix   []byte
		w, ht int
		ok    bool
	)
	if h.format == JPEG {
		var release func()
		if pix, w, ht, release, ok = jpegScaled(src, h, orientation, opt.ThumbSize); ok {
			defer release()
		}
	}
	if !ok {
		var err error
		if pix, w, ht, err = previewPixels(src, h, turn, small); err != nil {
			return Output{}, err
		}
	}
	if err := ctx.Err(); err != nil {
		return Output{}, err
	}
	return encodeRGB(pix, w, ht, opt.ThumbQuality)
}

// importParams makes libvips fail on any decoder warning (a truncated or
// damaged file) instead of returning grey or partial pixels; Go's decoders
// fail on the same files.
func importParams() *vips.ImportParams {
	p := vips.NewImportParams()
	p.FailOnError.Set(true)
	return p
}

// derive makes the preview with shrink-on-load, the only time the original
// is decoded, then encodes it and makes the thumbnail and the analysis
// image from its pixels in memory (fromPreview).
func (e *vipsEngine) derive(ctx context.Context, data []byte, h header, orientation int, opt Options) (*derived, error) {
	src, turn := data, 1
	if h.format.IsRaw() {
		var err error
		if src, turn, h.width, h.height, err = rawSource(data, h, opt); err != nil {
			return nil, err
		}
	}
	raw, pw, ph, ok := []byte(nil), 0, 0, false
	if h.format == JPEG {
		var release func()
		if raw, pw, ph, release, ok = jpegPreview(src, h, orientation, opt); ok {
			defer release()
		}
	}
	if !ok {
		var err error
		if raw, pw, ph, err = previewPixels(src, h, turn, opt); err != nil {
			return nil, err
		}
	}
	d := &derived{width: h.width, height: h.height}
	// libvips applied the orientation it read itself; a turned preview means
	// the full size is turned too.
	if (pw > ph) != (h.width > h.height) && pw != ph {
		d.width, d.height = h.height, h.width
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := fromPreview(raw, pw, ph, opt, d); err != nil {
		return nil, err
	}
	return d, nil
}

// previewPixels decodes src at the preview's size, upright, as packed
// opaque sRGB. The pixels are taken once, from the decode; the preview is
// encoded from them, and the thumbnail and the analysis image are made
// from them in memory rather than by decoding the encoded preview again.
func previewPixels(src []byte, h header, turn int, opt Options) ([]byte, int, int, error) {
	ref, fw, fh, shrink, err := loadPreview(src, h, opt)
	if err != nil {
		return nil, 0, 0, vipsDecodeError(h.format, err)
	}
	defer func() { ref.Close() }()
	if err := toOpaqueSRGB(ref); err != nil {
		return nil, 0, 0, vipsDecodeError(h.format, err)
	}
	if ref, err = turnVips(ref, turn); err != nil {
		return nil, 0, 0, vipsDecodeError(h.format, err)
	}
	raw, w, ht, err := sdrPixels(ref, h)
	if err != nil {
		return nil, 0, 0, err
	}
	if fw == 0 {
		return raw, w, ht, nil
	}
	raw, err = lanczosRGB(raw, w, ht, fw, fh, shrink)
	return raw, fw, fh, err
}

// loadPreview decodes src with libvips' thumbnail loader, which shrinks on
// load where the format can and applies the orientation. An image it would
// not shrink on load (splitFormats) it reduces in height only, and the
// preview's final size comes back as fw×fh, with the shrink that size is
// rounded from, for lanczosRGB to finish across: libvips 8.14's
// horizontal Lanczos3 is plain C and cost a 12 MP photo as much as its
// decode. fw is 0 when the image is already the preview.
func loadPreview(src []byte, h header, opt Options) (*vips.ImageRef, int, int, float64, error) {
	if long := max(h.width, h.height); splitFormats[h.format] && long > opt.PreviewSize && long < 4*opt.PreviewSize {
		// Sizes and orientation as libvips reads them: the request is of
		// the upright image, so it must turn with the picture.
		w, ht, swap, err := vipsGeometry(src)
		if err != nil {
			return nil, 0, 0, 0, err
		}
		fw, fh, shrink := vipsFit(w, ht, opt.PreviewSize)
		rw, rh := w, fh
		if swap {
			rw, rh, fw, fh = rh, rw, fh, fw
		}
		ref, err := vips.LoadThumbnailFromBuffer(src, rw, rh, vips.InterestingNone, vips.SizeForce, importParams())
		return ref, fw, fh, shrink, err
	}
	ref, err := vips.LoadThumbnailFromBuffer(src, opt.PreviewSize, opt.PreviewSize, vips.InterestingNone, vips.SizeDown, importParams())
	return ref, 0, 0, 0, err
}

// splitFormats are those libvips 8.14 does not shrink on load for a
// preview under four times smaller than the image: JPEG's smallest
// shrink-on-load is 2× when 4× is asked for, and HEIF, AVIF and JPEG XL
// have none. (WebP and TIFF do, and raws come with a turn of their own.)
var splitFormats = map[Format]bool{JPEG: true, HEIF: true, AVIF: true, JXL: true}

// vipsFit is the size libvips' thumbnail gives w×h fit in a box of long
// on each side, and the shrink it rounds that size from, so either way of
// making a preview gives the same picture.
func vipsFit(w, h, long int) (int, int, float64) {
	shrink := float64(max(w, h)) / float64(long)
	return max(1, int(float64(w)/shrink+0.5)), max(1, int(float64(h)/shrink+0.5)), shrink
}

// toOpaqueSRGB converts to 8-bit sRGB (from CMYK, grey, 16-bit) and
// flattens transparency onto white, as the Go engine does. An embedded
// profile (Display P3, Adobe RGB, CMYK, grey) is converted to sRGB first:
// outputs carry no profile, and browsers show untagged images as sRGB, so
// leaving wide-gamut numbers as they are would wash the colours out.
func toOpaqueSRGB(ref *vips.ImageRef) error {
	if ref.HasICCProfile() && !isSRGBProfile(ref.GetICCProfile()) {
		if err := ref.TransformICCProfile(vips.SRGBIEC6196621ICCProfilePath); err != nil {
			// A profile that does not fit the pixels (a broken or mislabelled
			// one) is dropped: the numbers are then taken as they are.
			slog.Debug("imaging: embedded colour profile not usable", "err", firstLine(err))
			if err := ref.RemoveICCProfile(); err != nil {
				return err
			}
		}
	}
	if ref.Interpretation() != vips.InterpretationSRGB || ref.BandFormat() != vips.BandFormatUchar {
		if err := ref.ToColorSpace(vips.InterpretationSRGB); err != nil {
			return err
		}
	}
	if ref.HasAlpha() {
		if err := ref.Flatten(&vips.Color{R: 255, G: 255, B: 255}); err != nil {
			return err
		}
	}
	if ref.BandFormat() != vips.BandFormatUchar {
		return ref.Cast(vips.BandFormatUchar)
	}
	return nil
}

// sdrPixels copies an opaque 3-band 8-bit image out of libvips as packed
// RGB, rendered for SDR when its source is PQ or HLG (toneMapSDR) on the
// copy: handing the mapped pixels back to libvips (as a PPM it parsed
// again) was nearly half of a PQ AVIF's Process. The mapping is per
// pixel, so it may come after a turn.
func sdrPixels(ref *vips.ImageRef, h header) ([]byte, int, int, error) {
	raw, err := ref.ToBytes()
	if err != nil {
		return nil, 0, 0, vipsDecodeError(h.format, err)
	}
	w, ht := ref.Width(), ref.Height()
	if ref.Bands() != 3 || len(raw) < 3*w*ht {
		return nil, 0, 0, fmt.Errorf("imaging: libvips gave %d bands, %d bytes for %d×%d sRGB", ref.Bands(), len(raw), w, ht)
	}
	if h.hdrTransfer != 0 {
		toneMapSDR(raw[:3*w*ht], 3, h.hdrPrimaries, h.hdrTransfer)
	}
	return raw, w, ht, nil
}

// rewritePixels hands an opaque 3-band 8-bit image's pixels to fn and
// returns what fn makes of them as a new image, closing ref. libvips'
// thumbnail images can only be read once, top to bottom, so work that
// needs the whole picture (turning it) is done on a copy in Go.
func rewritePixels(ref *vips.ImageRef, fn func(*image.RGBA) *image.RGBA) (*vips.ImageRef, error) {
	img, err := toRGBA(ref)
	if err != nil {
		return ref, err
	}
	img = fn(img)
	w, ht := img.Rect.Dx(), img.Rect.Dy()
	ppm := make([]byte, 0, 32+3*w*ht)
	ppm = appendRGB(fmt.Appendf(ppm, "P6\n%d %d\n255\n", w, ht), img)
	out, err := vips.LoadThumbnailFromBuffer(ppm, w, ht, vips.InterestingNone, vips.SizeDown, importParams())
	if err != nil {
		return ref, err
	}
	ref.Close()
	return out, nil
}

func exportJPEG(ref *vips.ImageRef, quality int) (Output, error) {
	p := vips.NewJpegExportParams()
	p.Quality = quality
	p.StripMetadata = true
	p.Interlace = false
	buf, _, err := ref.ExportJpeg(p)
	if err != nil {
		return Output{}, err
	}
	return Output{Data: buf, ContentType: contentTypeJPEG, Width: ref.Width(), Height: ref.Height()}, nil
}

// toRGBA copies a 3-band 8-bit image out of libvips.
func toRGBA(ref *vips.ImageRef) (*image.RGBA, error) {
	raw, err := ref.ToBytes()
	if err != nil {
		return nil, err
	}
	w, h, bands := ref.Width(), ref.Height(), ref.Bands()
	if bands != 3 || len(raw) < 3*w*h {
		return nil, fmt.Errorf("imaging: libvips gave %d bands, %d bytes for %d×%d sRGB", bands, len(raw), w, h)
	}
	return boxRGB(raw, w, h, 1), nil
}

func (e *vipsEngine) Render(ctx context.Context, data []byte, opt RenderOptions) ([]byte, error) {
	h, err := inspectFor(data, e.cfg, e)
	if err != nil {
		return nil, err
	}
	src, turn := data, 1
	if h.format.IsRaw() {
		// The embedded JPEG when it covers the box, else the sensor data.
		long := max(opt.Width, opt.Height)
		if long <= 0 || opt.Crop {
			long = vipsUnbounded
		}
		if src, turn, _, _, err = rawSource(data, h, Options{PreviewSize: long}); err != nil {
			return nil, err
		}
		if turn >= 5 { // the box applies once turned: load into the stored shape
			opt.Width, opt.Height = opt.Height, opt.Width
		}
	}
	var ref *vips.ImageRef
	switch {
	case opt.Width <= 0 && opt.Height <= 0:
		// The thumbnail loader with no limit: it knows every format libvips
		// reads (govips' own sniffing misses some HEIF brands) and orients.
		ref, err = vips.LoadThumbnailFromBuffer(src, vipsUnbounded, vipsUnbounded, vips.InterestingNone, vips.SizeDown, importParams())
	case opt.Crop && opt.Width > 0 && opt.Height > 0 && !h.format.IsRaw() && (h.width < max(opt.Width, opt.Height) || h.height < max(opt.Width, opt.Height)):
		// A side shorter than the box: crop to the box's shape, then
		// shrink only what is kept, never enlarging it (a 1×20000 strip
		// would otherwise cover billions of pixels).
		ref, err = vipsCropThenFill(src, opt.Width, opt.Height)
	case opt.Crop && opt.Width > 0 && opt.Height > 0:
		ref, err = vips.LoadThumbnailFromBuffer(src, opt.Width, opt.Height, vips.InterestingCentre, vips.SizeBoth, importParams())
	default:
		w, ht := opt.Width, opt.Height
		if w <= 0 {
			w = vipsUnbounded
		}
		if ht <= 0 {
			ht = vipsUnbounded
		}
		ref, err = vips.LoadThumbnailFromBuffer(src, w, ht, vips.InterestingNone, vips.SizeDown, importParams())
	}
	if err != nil {
		return nil, vipsDecodeError(h.format, err)
	}
	defer func() { ref.Close() }()
	if err := toOpaqueSRGB(ref); err != nil {
		return nil, vipsDecodeError(h.format, err)
	}
	if ref, err = turnVips(ref, turn); err != nil {
		return nil, vipsDecodeError(h.format, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if h.hdrTransfer != 0 {
		// Tone mapping needs the pixels in Go: encode them from there.
		raw, w, ht, err := sdrPixels(ref, h)
		if err != nil {
			return nil, err
		}
		out, err := encodeRGB(raw, w, ht, renderQuality(opt))
		return out.Data, err
	}
	out, err := exportJPEG(ref, renderQuality(opt))
	if err != nil {
		return nil, vipsDecodeError(h.format, err)
	}
	return out.Data, nil
}

// vipsUnbounded stands for "no limit" on one side of a fit box.
const vipsUnbounded = 10_000_000

// vipsDecodeError reports a libvips failure on input that passed inspect as
// a corrupt image, with libvips' first line (its errors carry a Go stack).
func vipsDecodeError(f Format, err error) error {
	return newError(CodeCorruptImage, nil, "the %s image cannot be decoded: %s", formatName(f), firstLine(err))
}

// firstLine is the first line of a libvips error (they carry a Go stack).
func firstLine(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return strings.TrimSpace(msg)
}

// vipsCropThenFill loads an image upright, cuts the largest centred part
// with the aspect of a w×h box, and scales that part to fill the box.
func vipsCropThenFill(src []byte, w, h int) (*vips.ImageRef, error) {
	ref, err := vips.LoadImageFromBuffer(src, importParams())
	if err != nil {
		return nil, err
	}
	if err := ref.AutoRotate(); err != nil {
		ref.Close()
		return nil, err
	}
	r := CentredBox(image.Rect(0, 0, ref.Width(), ref.Height()), w, h)
	if err := ref.ExtractArea(r.Min.X, r.Min.Y, r.Dx(), r.Dy()); err != nil {
		ref.Close()
		return nil, err
	}
	if r.Dx() <= w && r.Dy() <= h {
		return ref, nil // already no larger than the box
	}
	if err := ref.Thumbnail(w, h, vips.InterestingCentre); err != nil {
		ref.Close()
		return nil, err
	}
	return ref, nil
}
