// Package imaging turns an original photo (a []byte) into what the ingest
// step stores: a thumbnail and a preview from one decode, EXIF metadata, a
// 64-bit perceptual hash and a few quality signals. Thumbnail makes the
// thumbnail alone, decoding only what it needs (a JPEG at 1/8 in the DCT,
// a raw's embedded JPEG), for thumbnails made ahead of ingest. It also
// renders export images. It knows nothing of HTTP, queues or databases.
//
// Two engines do the pixel work behind one interface:
//
//   - "vips": libvips through govips, built only with cgo. It uses
//     shrink-on-load (vips_thumbnail_buffer) for the preview, so a large JPEG
//     is never decoded at full size, then encodes the preview and derives
//     the thumbnail and the analysis images from its pixels in memory. A
//     plain JPEG (no colour profile but sRGB, not CMYK, under four times
//     the preview) is decoded by libjpeg-turbo directly instead, scaled in
//     the DCT from twice the preview's size, and every output is encoded
//     by libjpeg-turbo directly with libvips' jpegsave settings: libvips'
//     pipeline around the same codec cost a third more.
//   - "go": the standard library decoders plus golang.org/x/image for WebP
//     and TIFF, resized with github.com/nfnt/resize (it has fast paths for
//     YCbCr and grey images and spreads work over all cores, where
//     x/image/draw's good kernels are single-threaded and several times
//     slower).
//
// The "vips" engine also reads HEIC/HEIF, AVIF and JPEG XL (libheif and
// libjxl, which apply the file's own rotation while decoding, so it is not
// applied again) and camera raws through LibRaw: a raw's largest embedded
// JPEG when its long edge reaches the preview size (fast, and what the
// camera itself shows), else its sensor data developed to sRGB (at half
// size when that still covers the preview). The "go" engine refuses those
// with CodeUnsupportedFormat, naming the engine that reads them.
//
// New("", cfg) picks "vips" when the binary is built with cgo and "go" when
// it is not. Both engines share the checks that run before any pixel is
// decoded (format sniffing, the byte and pixel limits read from the header,
// the structure of progressive JPEGs) and the EXIF reader, so they reject
// the same files with the same codes.
//
// Outputs are JPEG: the thumbnail (long edge 320 px, quality 80) and the
// preview (long edge 2048 px, quality 82). JPEG rather than WebP because every
// client shows it and the pure Go engine can write it (Go has no WebP
// encoder), so both engines give the same kind of file. Images are never
// enlarged; transparency is flattened onto white; EXIF orientation is applied;
// metadata is stripped from the outputs.
//
// EXIF is read by the package's own TIFF reader from the format's EXIF
// block (at most 64 KiB in a JPEG): it works on bytes in memory, reads each
// directory at most once and follows no offset outside the block, so a
// hostile block costs microseconds and leaves nothing running. PHash is a DCT hash; two photos are
// copies of each other when Hamming(a, b) <= SimilarThreshold. Render makes
// the images of exports.
//
// Every refusal is an *Error with a stable Code (see the Code* constants);
// use ErrorCode(err) to read it. A broken EXIF block is never fatal: it is
// reported in Result.MetadataWarning and the pixels are processed.
//
// # Choices
//
// Derived files are JPEG (thumbnail long edge 320 px q80, preview 2048 px
// q82): every client shows JPEG and both imaging engines can write it. Both
// are Lanczos3 resizes. In the libvips engine, a JPEG, HEIF, AVIF or JPEG XL
// under four times the preview size is shrunk in height by libvips and across
// by imaging/lanczos.go, a vectorised Lanczos3 in C (libvips 8.14's own
// horizontal pass is scalar and cost as much as the decode); the preview is
// the size libvips' thumbnail gives, and TestPreviewLikeLibvips keeps it
// within JPEG noise of libvips' own.
//
// Formats: JPEG, PNG, GIF, WebP, TIFF, HEIC/HEIF (.heic .heif .hif), AVIF,
// JPEG XL, DNG and camera raws (CR2, CR3, CRW, NEF, NRW, ARW, RAF, ORF, RW2,
// PEF, SRW), recognised by their bytes (imaging/formats); the extension
// decides only when the browser sends no type or application/octet-stream.
// HEIF, AVIF, JPEG XL and raws need the libvips engine (a cgo build with
// LibRaw); the pure-Go engine refuses them with unsupported_format naming the
// libvips engine. Pixel limits are checked from the header before any decode.
//
// Raws show their embedded JPEG when its long edge reaches the preview size;
// otherwise LibRaw develops the sensor data (at half size when that still
// covers the preview). LibRaw 0.20 crops differently from the sizes some tools
// report: the DNG develops to 1734×1156, the CRW to 2176×1448. A raw that
// cannot be developed (the header-only stubs) fails with corrupt_image; its
// camera is kept on the asset and named in the message.
//
// Colour: thumbnails and previews are sRGB JPEGs without a profile. Display
// P3, Adobe RGB, CMYK and other embedded profiles are converted (profiles that
// already say sRGB are left as they are); 16-bit sources go to 8 bits; PQ and
// HLG HDR is tone-mapped to SDR; alpha is flattened onto white. Originals are
// kept byte for byte.
//
// Metadata comes from EXIF in JPEG, PNG, WebP, TIFF, HEIF/AVIF, JPEG XL and
// raws (CR3 and RAF included) through an in-memory TIFF reader that reads each
// directory once (at most 64), never follows an offset out of the block and
// runs in the caller's goroutine, so a hostile file cannot leave a parser
// running; a JPEG without EXIF gets its fields from XMP.
package imaging

import (
	"context"
	"errors"
	"fmt"
	"image"
	"strings"

	"lightbox/imaging/formats"
)

// Error codes. They are stable: callers store them and show them to users.
const (
	CodeEmptyFile         = "empty_file"         // zero bytes
	CodeTooLarge          = "too_large"          // more bytes than Config.MaxBytes
	CodeUnsupportedFormat = "unsupported_format" // not an accepted format, or one this engine cannot decode
	CodeTooManyPixels     = "too_many_pixels"    // header says more than Config.MaxPixels
	CodeCorruptImage      = "corrupt_image"      // the format is known but the file does not decode
)

// Error is a refusal of the input, with a stable snake_case Code. Bad input
// never gets better by retrying, so callers should not retry these.
type Error struct {
	Code    string
	Message string
	Err     error // the underlying decoder error, if any
	// Metadata is what could still be read of a file that does not decode
	// (a raw's camera), or nil.
	Metadata *Metadata
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Code + ": " + e.Message + ": " + e.Err.Error()
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// ErrorCode returns the Code of an *Error in err's chain, or "" if there is
// none (a context error or an internal failure, worth a retry).
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func newError(code string, err error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}

// Format is an input image format; package formats lists them.
type Format = formats.Format

// Formats the engines know. The "go" engine decodes JPEG to TIFF; the others
// need the "vips" engine (HEIF, AVIF, JPEG XL through libvips, raws through
// their embedded previews and LibRaw).
const (
	JPEG = formats.JPEG
	PNG  = formats.PNG
	GIF  = formats.GIF
	WebP = formats.WebP
	TIFF = formats.TIFF
	HEIF = formats.HEIF
	AVIF = formats.AVIF
	JXL  = formats.JXL
	CR3  = formats.CR3
	CRW  = formats.CRW
	RAF  = formats.RAF
)

// Defaults for Config and Options.
const (
	DefaultMaxPixels      = 100_000_000 // 100 megapixels
	DefaultMaxBytes       = 200 << 20   // 200 MiB
	DefaultThumbSize      = 320
	DefaultThumbQuality   = 80
	DefaultPreviewSize    = 2048
	DefaultPreviewQuality = 82
)

// Config holds limits and engine settings, fixed when the engine is made.
type Config struct {
	// MaxPixels refuses images whose header declares more pixels
	// (width×height), before any decoding. 0 means DefaultMaxPixels.
	MaxPixels int64
	// MaxBytes refuses larger inputs. 0 means DefaultMaxBytes.
	MaxBytes int64
	// VipsConcurrency is the number of threads libvips uses for one image.
	// 0 means 1: the worker already processes several images at once, and
	// more threads per image would only compete with it.
	VipsConcurrency int
	// VipsCacheMB bounds libvips' operation cache. 0 turns it off: ingest
	// never sees the same image twice, so the cache would only hold memory.
	VipsCacheMB int
}

func (c Config) withDefaults() Config {
	if c.MaxPixels <= 0 {
		c.MaxPixels = DefaultMaxPixels
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.VipsConcurrency <= 0 {
		c.VipsConcurrency = 1
	}
	return c
}

// Options are per-call output settings; zero fields take the defaults.
type Options struct {
	ThumbSize      int // long edge of the thumbnail, px
	ThumbQuality   int // JPEG quality of the thumbnail, 1-100
	PreviewSize    int // long edge of the preview, px
	PreviewQuality int // JPEG quality of the preview, 1-100
}

func (o Options) withDefaults() Options {
	if o.ThumbSize <= 0 {
		o.ThumbSize = DefaultThumbSize
	}
	if o.ThumbQuality <= 0 || o.ThumbQuality > 100 {
		o.ThumbQuality = DefaultThumbQuality
	}
	if o.PreviewSize <= 0 {
		o.PreviewSize = DefaultPreviewSize
	}
	if o.PreviewQuality <= 0 || o.PreviewQuality > 100 {
		o.PreviewQuality = DefaultPreviewQuality
	}
	return o
}

// Output is one encoded derivative.
type Output struct {
	Data        []byte
	ContentType string
	Width       int
	Height      int
}

// Result is everything Process learns from one original.
type Result struct {
	Format Format
	// Width and Height are the full size once EXIF orientation is applied.
	Width, Height int
	Thumbnail     Output
	Preview       Output
	Metadata      Metadata
	// MetadataWarning says what was wrong with the EXIF block, if anything.
	MetadataWarning string
	// PHash is the perceptual hash; compare two with Hamming.
	PHash   uint64
	Quality Quality
	// Image holds the thumbnail's pixels (oriented, opaque sRGB), for
	// embedders and other analysis that wants a small decoded image.
	Image *image.RGBA
}

// Quality holds simple technical signals for ranking shots.
type Quality struct {
	// Sharpness is the variance of the Laplacian of the luminance (0-255
	// scale) of the image scaled to a 1024 px long edge, so values compare
	// across resolutions. Higher is sharper; below ~50 is usually blurred.
	Sharpness float64 `json:"sharpness"`
	// HighlightsClipped is the fraction of pixels with luminance ≥ 250.
	HighlightsClipped float64 `json:"highlightsClipped"`
	// ShadowsClipped is the fraction of pixels with luminance ≤ 5.
	ShadowsClipped float64 `json:"shadowsClipped"`
	// MeanLuminance is the mean luminance, 0 (black) to 1 (white).
	MeanLuminance float64 `json:"meanLuminance"`

	// Focus, 0–100, is how sharp the photo is where it is sharpest (its
	// subject), so a shallow depth of field is not blurred.
	Focus float64 `json:"focus"`
	// MotionBlur, 0–100, is how much softer the subject is along one
	// direction than across it: a camera or subject that moved.
	MotionBlur float64 `json:"motionBlur"`
	// Exposure is an EV offset from a well-exposed frame, judged on the
	// lit part of the scene: a night sky or a black backdrop is 0.
	Exposure float64 `json:"exposure"`
	// Detail, 0–1, is the share of the frame with any detail: near 0 for
	// a lens cap or a frame of blank ground.
	Detail float64 `json:"detail"`
	// Warnings and Score are package assist's judgement of the signals at
	// the default strictness, set by the ingest.
	Warnings []string `json:"warnings"`
	Score    int      `json:"score"`
}

// RenderOptions describe one export image. With Width and Height both 0 the
// image keeps its full size. Otherwise it fits within Width×Height, or with
// Crop it fills Width×Height, centre-cropped. The box is a bound, never a
// target: an image is never enlarged, so a source smaller than a crop box
// gives the largest box of the same shape that it covers.
type RenderOptions struct {
	Width, Height int
	Crop          bool
	Quality       int // JPEG quality; 0 means 90
}

// Engine does the pixel work. Implementations are safe for concurrent use.
type Engine interface {
	// Name is "vips" or "go".
	Name() string
	// Process checks, decodes once and derives everything in Result.
	Process(ctx context.Context, data []byte, opt Options) (*Result, error)
	// Thumbnail makes only the thumbnail, as cheaply as the format allows,
	// after the same checks as Process; it may differ from Process's by
	// rounding, never by size or orientation.
	Thumbnail(ctx context.Context, data []byte, opt Options) (Output, error)
	// Render makes one oriented JPEG export image from an original.
	Render(ctx context.Context, data []byte, opt RenderOptions) ([]byte, error)
}

// Engine names accepted by New.
const (
	EngineVips = "vips"
	EngineGo   = "go"
)

// New returns the engine called name ("vips" or "go"); "" picks
// DefaultEngine. Asking for "vips" in a build without cgo is an error.
//
// The first "vips" engine starts libvips with cfg's VipsConcurrency and
// VipsCacheMB; later calls reuse it as it is. Call Shutdown when the process
// ends.
func New(name string, cfg Config) (Engine, error) {
	cfg = cfg.withDefaults()
	if name == "" {
		name = DefaultEngine
	}
	switch name {
	case EngineGo:
		return &goEngine{cfg: cfg}, nil
	case EngineVips:
		return newVips(cfg)
	}
	return nil, fmt.Errorf("imaging: unknown engine %q (want %q or %q)", name, EngineVips, EngineGo)
}

// process runs the engine and fills in the parts both engines share: the
// checks before decoding, EXIF, the hash and the quality signals.
func process(ctx context.Context, cfg Config, data []byte, opt Options, d deriver) (*Result, error) {
	opt = opt.withDefaults()
	h, err := inspectFor(data, cfg, d)
	if err != nil {
		return nil, nameCamera(ctx, err, h, nil)
	}
	meta, warning := readMetadata(ctx, h)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out, err := d.derive(ctx, data, h, meta.Orientation, opt)
	if err != nil {
		return nil, nameCamera(ctx, err, h, &meta)
	}
	return &Result{
		Format:          h.format,
		Width:           out.width,
		Height:          out.height,
		Thumbnail:       out.thumb,
		Preview:         out.preview,
		Metadata:        meta,
		MetadataWarning: warning,
		PHash:           PHash(out.small),
		Quality:         measureQuality(out.mid),
		Image:           out.small,
	}, nil
}

// thumbnail runs the checks Process runs and has the engine make the
// thumbnail alone.
func thumbnail(ctx context.Context, cfg Config, data []byte, opt Options, d deriver) (Output, error) {
	opt = opt.withDefaults()
	h, err := inspectFor(data, cfg, d)
	if err != nil {
		return Output{}, err
	}
	meta, _ := readMetadata(ctx, h)
	if err := ctx.Err(); err != nil {
		return Output{}, err
	}
	return d.thumb(ctx, data, h, meta.Orientation, opt)
}

// nameCamera adds the camera to the message and the error of a raw that
// cannot be decoded: which camera wrote it is what a photographer needs to
// know about it. h is what inspectFor learnt of the file and m its metadata,
// or nil when it has not been read yet.
func nameCamera(ctx context.Context, err error, h header, m *Metadata) error {
	var ie *Error
	if !errors.As(err, &ie) || ie.Code != CodeCorruptImage || !h.format.IsRaw() {
		return err
	}
	if m == nil {
		read, _ := readMetadata(ctx, h)
		m = &read
	}
	if camera := strings.TrimSpace(m.CameraMake + " " + m.CameraModel); camera != "" {
		ie.Message += " (camera: " + camera + ")"
		ie.Metadata = m
	}
	return err
}

// deriver is the engine-specific part of Process and Thumbnail.
type deriver interface {
	derive(ctx context.Context, data []byte, h header, orientation int, opt Options) (*derived, error)
	thumb(ctx context.Context, data []byte, h header, orientation int, opt Options) (Output, error)
}

type derived struct {
	width, height  int // full size, oriented
	preview, thumb Output
	small          *image.RGBA // the thumbnail's pixels
	mid            *image.RGBA // long edge analysisSize, for quality signals
}

// analysisSize is the long edge of the image quality signals are measured on.
const analysisSize = 1024

const contentTypeJPEG = "image/jpeg"

// fitSize scales w×h so its long edge is at most long, keeping the aspect
// ratio and never enlarging.
func fitSize(w, h, long int) (int, int) {
	if w <= long && h <= long {
		return w, h
	}
	if w >= h {
		return long, max(1, (h*long+w/2)/w)
	}
	return max(1, (w*long+h/2)/h), long
}
