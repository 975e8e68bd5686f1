//go:build cgo

package worker_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/davidbyttow/govips/v2/vips"

	"lightbox/imaging"
)

// decodeFloor is the time libvips takes to decode every photo at the
// scale the preview needs, with nothing else: JPEG shrink-on-load by the
// largest power of two that still leaves the preview's long edge (none
// for a 4000×3000 photo and a 2,048 px preview), and the pixels summed
// (vips_avg) so every one is decoded. It runs as many
// decodes at once as GOMAXPROCS, which is also the worker's default
// concurrency, each on one libvips thread as the worker's are.
func decodeFloor(b *testing.B, n int, photo func(i int) []byte) time.Duration {
	b.Helper()
	// Starts libvips as the worker does, if nothing has yet.
	if _, err := imaging.New(imaging.EngineVips, imaging.Config{}); err != nil {
		b.Fatal(err)
	}
	return eachAtOnce(b, n, runtime.GOMAXPROCS(0), func(i int) error { return decodeAtPreviewScale(photo(i)) })
}

// processAlone is the time the worker's own image step (imaging's
// Process: decode, thumbnail, preview, analysis image, EXIF) takes on
// every photo, concurrency at once, in this process with nothing around
// it: no queue, no storage, no records, no events.
func processAlone(b *testing.B, n, concurrency int, photo func(i int) []byte) time.Duration {
	b.Helper()
	engine, err := imaging.New(imaging.EngineVips, imaging.Config{})
	if err != nil {
		b.Fatal(err)
	}
	return eachAtOnce(b, n, concurrency, func(i int) error {
		_, err := engine.Process(context.Background(), photo(i), imaging.Options{})
		return err
	})
}

// eachAtOnce runs do for 0..n-1 on concurrency goroutines and says how
// long it took.
func eachAtOnce(b *testing.B, n, concurrency int, do func(i int) error) time.Duration {
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed error
	start := time.Now()
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := do(i); err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	took := time.Since(start)
	if failed != nil {
		b.Fatal(failed)
	}
	return took
}

func decodeAtPreviewScale(data []byte) error {
	h, err := vips.LoadImageFromBuffer(data, nil)
	if err != nil {
		return err
	}
	long := max(h.Width(), h.Height())
	h.Close()
	shrink := 1
	for shrink < 8 && long/(shrink*2) >= imaging.DefaultPreviewSize {
		shrink *= 2
	}
	// The thumbnail loader asked for exactly the shrunk size reads the
	// file once, sequentially, with that shrink-on-load and no resize: the
	// cheapest way libvips has to decode it.
	size := long / shrink
	ref, err := vips.LoadThumbnailFromBuffer(data, size, size, vips.InterestingNone, vips.SizeDown, nil)
	if err != nil {
		return err
	}
	defer ref.Close()
	_, err = ref.Average()
	return err
}
