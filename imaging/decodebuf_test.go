//go:build cgo

package imaging

import (
	"bytes"
	"testing"
	"time"

	"lightbox/internal/testenv"
)

// A decode into memory an earlier photo left behind gives the pixels a
// decode into fresh memory gives.
func TestDecodesReuseMemoryCleanly(t *testing.T) {
	var want [][]byte
	names := []string{"photos/kite-2560x1600.jpg", "photos/path-2560x1600.jpg"}
	for round := range 3 {
		for i, name := range names {
			data := readCorpus(t, name)
			h, err := inspectFor(data, Config{}.withDefaults(), nil)
			if err != nil {
				t.Fatal(err)
			}
			pix, _, _, ok := jpegScaled(data, h, 1, 1024)
			if !ok {
				t.Fatalf("%s: not decoded", name)
			}
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
