package formats

import (
	"bytes"
	"testing"
)

// FuzzSniff checks the sniffer on any first bytes: it never reads past
// what it is given, names only formats of the table, and a file's name
// for its type leads back to the same format.
func FuzzSniff(f *testing.F) {
	f.Fuzz(func(t *testing.T, head []byte) {
		orig := bytes.Clone(head)
		got := Sniff(head)
		if !bytes.Equal(head, orig) {
			t.Fatal("Sniff changed its input")
		}
		if got == "" {
			return
		}
		if got.ContentType() == "" {
			t.Fatalf("Sniff named %q, which the table does not know", got)
		}
		if back := FromContentType(got.ContentType()); back != got {
			t.Fatalf("Sniff named %q; its type %q reads back as %q", got, got.ContentType(), back)
		}
	})
}
