package formats

import (
	"os"
	"path/filepath"
	"testing"

	"lightbox/testsupport/testenv"
)

// TestSniff names every shared format file from its first few KiB, as URL
// import sees it, and agrees with its extension.
func TestSniff(t *testing.T) {
	dir := testenv.Formats(t)
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*.*"))
	stubs, _ := filepath.Glob(filepath.Join(dir, "raw", "stubs", "*"))
	for _, f := range append(files, stubs...) {
		if filepath.Ext(f) == ".md" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		head := data[:min(len(data), 8<<10)]
		if got, want := Sniff(head), FromExt(f); got != want {
			t.Errorf("%s: sniffed %q, extension says %q", filepath.Base(f), got, want)
		}
	}
	for _, c := range []struct {
		head string
		want Format
	}{{"", ""}, {"<html>", ""}, {"II*\x00\x08\x00\x00\x00\x00\x00", TIFF}, {"\x00\x00\x00\x18ftypheix\x00\x00\x00\x00mif1heix", HEIF}} {
		if got := Sniff([]byte(c.head)); got != c.want {
			t.Errorf("Sniff(%q) = %q, want %q", c.head, got, c.want)
		}
	}
}

func TestFromContentTypeAndExt(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Format
	}{{"image/heic", HEIF}, {"image/heif", HEIF}, {"IMAGE/AVIF", AVIF}, {"image/x-canon-cr3", CR3}, {"application/octet-stream", ""}} {
		if got := FromContentType(c.in); got != c.want {
			t.Errorf("FromContentType(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, c := range []struct {
		in   string
		want Format
	}{{"IMG_0001.HEIC", HEIF}, {"a.hif", HEIF}, {"b.NEF", NEF}, {"c.jxl", JXL}, {"d.psd", ""}} {
		if got := FromExt(c.in); got != c.want {
			t.Errorf("FromExt(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
