//go:build cgo

package imaging

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/davidbyttow/govips/v2/vips"

	"lightbox/testsupport/procstat"
)

// BenchmarkStages times each step the vips engine takes to make a 12 MP
// JPEG's outputs, one photo after another on one libvips thread as the
// worker runs them, beside the decode floor the pipeline benchmark
// compares against (the same photo decoded whole, nothing else). Every
// step runs on every photo in turn, so a busy moment falls on all alike.
//
// ceiling_of_floor is floor / Process: the most of the decode floor any
// pipeline making these outputs could reach, before storing, embedding or
// recording anything.
//
// lanczos_plain is the pass across again with its rows laid out one sample
// at a time (lanczosShuffles off), on the same rows, as a baseline for the
// byte shuffles.
func BenchmarkStages(b *testing.B) {
	// Starts libvips on one thread, as the worker does, before the crops.
	e, err := New(EngineVips, Config{VipsConcurrency: 1})
	if err != nil {
		b.Fatal(err)
	}
	photos := twelveMPCrops(b, 4)
	cfg := Config{}.withDefaults()
	opt := Options{}.withDefaults()
	steps := []string{"floor", "process", "decode_rows", "lanczos_across", "lanczos_plain", "encode_preview", "thumbnail", "analysis", "signals", "metadata", "xmp"}
	packet := lightroomPacket()
	spent := make(map[string]time.Duration, len(steps))
	timed := func(step string, fn func() error) {
		start := time.Now()
		if err := fn(); err != nil {
			b.Fatalf("%s: %v", step, err)
		}
		spent[step] += time.Since(start)
	}
	for b.Loop() {
		for _, data := range photos {
			timed("floor", func() error {
				ref, err := vips.LoadThumbnailFromBuffer(data, 4000, 4000, vips.InterestingNone, vips.SizeDown, nil)
				if err != nil {
					return err
				}
				defer ref.Close()
				_, err = ref.Average()
				return err
			})
			timed("process", func() error {
				_, err := e.Process(context.Background(), data, opt)
				return err
			})
			h, err := inspect(data, cfg)
			if err != nil {
				b.Fatal(err)
			}
			timed("metadata", func() error {
				_, _ = readMetadata(context.Background(), h)
				return nil
			})
			// The preview's pixels, as previewPixels makes them, in its
			// two parts: libvips decodes and shrinks the height, then
			// lanczosRGB shrinks across.
			var rows []byte
			var w, ht, fw, fh int
			var shrink float64
			timed("decode_rows", func() error {
				ref, gw, gh, s, err := loadPreview(data, h, opt)
				if err != nil {
					return err
				}
				defer ref.Close()
				if err := toOpaqueSRGB(ref); err != nil {
					return err
				}
				fw, fh, shrink = gw, gh, s
				w, ht = ref.Width(), ref.Height()
				rows, err = ref.ToBytes()
				return err
			})
			// The pass works in place: the plain one gets its own copy.
			plain := bytes.Clone(rows)
			var pix []byte
			timed("lanczos_across", func() (err error) {
				pix, err = lanczosRGB(rows, w, ht, fw, fh, shrink)
				return err
			})
			lanczosShuffles(false)
			timed("lanczos_plain", func() error {
				_, err := lanczosRGB(plain, w, ht, fw, fh, shrink)
				return err
			})
			lanczosShuffles(true)
			timed("encode_preview", func() error {
				_, err := encodeRGB(pix, fw, fh, opt.PreviewQuality)
				return err
			})
			timed("thumbnail", func() error {
				small, err := shrinkRGB(pix, fw, fh, opt.ThumbSize)
				if err != nil {
					return err
				}
				PHash(small)
				_, err = encodeRGB(appendRGB(nil, small), small.Rect.Dx(), small.Rect.Dy(), opt.ThumbQuality)
				return err
			})
			var mid *image.RGBA
			timed("analysis", func() (err error) {
				mid, err = shrinkRGB(pix, fw, fh, analysisSize)
				if err == nil {
					measureQuality(mid)
				}
				return err
			})
			// Part of analysis: the judged signals alone.
			timed("signals", func() error {
				var q Quality
				measureSignals(&q, mid, toGray(mid))
				return nil
			})
			// Part of metadata for a photo that carries an editor's
			// packet: its decisions read.
			timed("xmp", func() error {
				if d, _ := readDecisions(packet, nil); d == nil || d.Rating != 4 {
					b.Fatal("the packet's decisions were not read")
				}
				return nil
			})
		}
	}
	n := float64(b.N * len(photos))
	ms := func(step string) float64 { return spent[step].Seconds() * 1000 / n }
	for _, s := range steps {
		b.ReportMetric(ms(s), s+"_ms/photo")
	}
	b.ReportMetric(ms("floor")/ms("process"), "ceiling_of_floor")
	b.ReportMetric(100*ms("signals")/ms("process"), "signals_%_of_process")
	b.ReportMetric(100*ms("xmp")/ms("process"), "xmp_%_of_process")
	b.ReportMetric(ms("lanczos_plain")/ms("lanczos_across"), "x_plain_layout")
}

// lightroomPacket is a packet as Lightroom Classic saves one for a culled
// and developed photo: stars, a label, 30 keywords flat and in a
// hierarchy, captions, a page of develop settings and a history.
func lightroomPacket() []byte {
	var kw, hier, crs, hist strings.Builder
	for i := range 30 {
		fmt.Fprintf(&kw, "<rdf:li>keyword %d</rdf:li>", i)
		fmt.Fprintf(&hier, "<rdf:li>places|region %d|keyword %d</rdf:li>", i%5, i)
	}
	for i := range 80 {
		fmt.Fprintf(&crs, " crs:Setting%d=\"+%d\"", i, i)
	}
	for i := range 10 {
		fmt.Fprintf(&hist, `<rdf:li stEvt:action="saved" stEvt:instanceID="xmp.iid:%d" stEvt:when="2026-06-01T12:00:0%d+02:00" stEvt:softwareAgent="Adobe Photoshop Lightroom Classic 14.0" stEvt:changed="/metadata"/>`, i, i%10)
	}
	return []byte(`<?xpacket begin="\ufeff" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
<rdf:Description rdf:about="" xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/"
 xmlns:lr="http://ns.adobe.com/lightroom/1.0/" xmlns:photoshop="http://ns.adobe.com/photoshop/1.0/"
 xmlns:crs="http://ns.adobe.com/camera-raw-settings/1.0/" xmlns:xmpMM="http://ns.adobe.com/xap/1.0/mm/"
 xmlns:stEvt="http://ns.adobe.com/xap/1.0/sType/ResourceEvent#"
 xmp:Rating="4" xmp:Label="Red" photoshop:City="Lisbon"` + crs.String() + `>
<dc:title><rdf:Alt><rdf:li xml:lang="x-default">The kite</rdf:li></rdf:Alt></dc:title>
<dc:subject><rdf:Bag>` + kw.String() + `</rdf:Bag></dc:subject>
<lr:hierarchicalSubject><rdf:Bag>` + hier.String() + `</rdf:Bag></lr:hierarchicalSubject>
<xmpMM:History><rdf:Seq>` + hist.String() + `</rdf:Seq></xmpMM:History>
</rdf:Description></rdf:RDF></x:xmpmeta>
<?xpacket end="w"?>`)
}

// twelveMPCrops cuts n distinct 4000×3000 windows from the corpus's
// largest photo and encodes each as a JPEG at quality 85, as a camera
// writes a 12 MP photo.
func twelveMPCrops(b *testing.B, n int) [][]byte {
	src, err := vips.NewImageFromFile(filepath.Join(corpusDir(b), "photos", "kleiber-6028x3391.jpg"))
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	out := make([][]byte, n)
	for i := range out {
		crop, err := src.Copy()
		if err == nil {
			err = crop.ExtractArea(i*(src.Width()-4000)/max(1, n-1), i*(src.Height()-3000)/max(1, n-1), 4000, 3000)
		}
		if err == nil {
			out[i], _, err = crop.ExportJpeg(&vips.JpegExportParams{Quality: 85})
		}
		if crop != nil {
			crop.Close()
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	return out
}

// timedDecodes decodes each file whole with libvips, nothing else, with
// the benchmark's clock stopped, and returns the CPU time that took.
func timedDecodes(b *testing.B, data [][]byte) time.Duration {
	b.StopTimer()
	defer b.StartTimer()
	start := procstat.CPU(os.Getpid())
	for _, d := range data {
		ref, err := vips.LoadImageFromBuffer(d, nil)
		if err != nil {
			b.Fatal(err)
		}
		_, err = ref.Average()
		ref.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	return procstat.CPU(os.Getpid()) - start
}
