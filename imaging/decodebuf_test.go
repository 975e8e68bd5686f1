//go:build cgo

package imaging

import (
	"bytes"
	"testing"
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
