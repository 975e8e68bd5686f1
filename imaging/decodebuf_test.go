//go:build cgo

package imaging

import (
	"bytes"
	"reflect"
	"sync"
	"testing"
	"time"

	"lightbox/testsupport/testenv"
)

// A decode into memory an earlier photo left behind gives the pixels a
// decode into fresh memory gives.
func TestDecodesReuseMemoryCleanly(t *testing.T) {
	var want [][]byte
	names := []string{"photos/kite-2560x1600.jpg", "photos/path-2560x1600.jpg"}
	for round := range 3 {
		for i, name := range names {
			pix, _, _ := scaledCorpus(t, name, 1024)
			if round == 0 {
				want = append(want, pix)
			} else if !bytes.Equal(pix, want[i]) {
				t.Fatalf("%s decoded again after another photo: the pixels differ", name)
			}
		}
	}
	decodeBuffers.mu.Lock()
	kept := len(decodeBuffers.free)
	decodeBuffers.mu.Unlock()
	if kept == 0 {
		t.Fatal("no decode buffer was kept for reuse")
	}
}

// scaledCorpus decodes a corpus JPEG with jpegScaled for a long edge of
// long and returns a copy of its pixels, its buffers released.
func scaledCorpus(t *testing.T, name string, long int) ([]byte, int, int) {
	t.Helper()
	data := readCorpus(t, name)
	h, err := inspectFor(data, Config{}.withDefaults(), nil)
	if err != nil {
		t.Fatal(err)
	}
	kept, w, ht, release, ok := jpegScaled(data, h, 1, long)
	if !ok {
		t.Fatalf("%s: not decoded", name)
	}
	defer release()
	return bytes.Clone(kept), w, ht
}

// Previews and thumbnails are made from pixels that go back to the kept
// buffers once they are encoded: photos processed side by side, round
// after round, come out as they did one at a time.
func TestProcessOutputsOutliveTheirBuffers(t *testing.T) {
	e, err := New(EngineVips, Config{})
	if err != nil {
		t.Fatal(err)
	}
	// Resized across and down, and one under the preview's size, whose
	// preview is the decoded pixels themselves.
	names := []string{"photos/kite-2560x1600.jpg", "photos/path-2560x1600.jpg", "photos/blinds.jpg", "photos/wood.jpg"}
	want := make([]*Result, len(names))
	for i, name := range names {
		if want[i], err = e.Process(t.Context(), readCorpus(t, name), Options{}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for round := range 3 {
				i := (g + round) % len(names)
				got, err := e.Process(t.Context(), readCorpus(t, names[i]), Options{})
				if err != nil {
					t.Error(err)
					return
				}
				if !bytes.Equal(got.Preview.Data, want[i].Preview.Data) || !bytes.Equal(got.Thumbnail.Data, want[i].Thumbnail.Data) ||
					!reflect.DeepEqual(got.Quality, want[i].Quality) || got.PHash != want[i].PHash {
					t.Errorf("%s processed beside others: its outputs differ from its own alone", names[i])
				}
			}
		})
	}
	wg.Wait()
}

// Kept buffers have a size limit and go once no decode has come for a
// while.
func TestDecodeBuffersAreBoundedAndGiveMemoryBack(t *testing.T) {
	big := cBuffers{keep: 2, largest: 4 << 20, idle: time.Hour}
	big.put(big.get(8 << 20))
	if len(big.free) != 0 {
		t.Fatalf("%d buffers kept, want none over the largest kept size", len(big.free))
	}
	cb := cBuffers{keep: 2, largest: 4 << 20, idle: 10 * time.Millisecond}
	a, b, c := cb.get(2<<20), cb.get(2<<20), cb.get(3<<20)
	cb.put(a)
	cb.put(b)
	cb.put(c)
	cb.mu.Lock()
	kept := len(cb.free)
	cb.mu.Unlock()
	if kept > 2 {
		t.Fatalf("%d buffers kept, want at most 2", kept)
	}
	testenv.Eventually(t, "kept buffers freed once idle", time.Minute, func() bool {
		cb.mu.Lock()
		defer cb.mu.Unlock()
		return len(cb.free) == 0
	})
}
