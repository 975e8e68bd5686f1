package formats_test

import (
	"os"
	"path/filepath"
	"testing"

	"lightbox/imaging/formats"
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
		if got, want := formats.Sniff(head), formats.FromExt(f); got != want {
			t.Errorf("%s: sniffed %q, extension says %q", filepath.Base(f), got, want)
		}
	}
	for _, c := range []struct {
		head string
		want formats.Format
	}{{"", ""}, {"<html>", ""}, {"II*\x00\x08\x00\x00\x00\x00\x00", formats.TIFF}, {"\x00\x00\x00\x18ftypheix\x00\x00\x00\x00mif1heix", formats.HEIF}} {
		if got := formats.Sniff([]byte(c.head)); got != c.want {
			t.Errorf("Sniff(%q) = %q, want %q", c.head, got, c.want)
		}
	}
}

func TestFromContentTypeAndExt(t *testing.T) {
	for _, c := range []struct {
		in   string
		want formats.Format
	}{{"image/heic", formats.HEIF}, {"image/heif", formats.HEIF}, {"IMAGE/AVIF", formats.AVIF}, {"image/x-canon-cr3", formats.CR3}, {"application/octet-stream", ""}} {
		if got := formats.FromContentType(c.in); got != c.want {
			t.Errorf("FromContentType(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, c := range []struct {
		in   string
		want formats.Format
	}{{"IMG_0001.HEIC", formats.HEIF}, {"a.hif", formats.HEIF}, {"b.NEF", formats.NEF}, {"c.jxl", formats.JXL}, {"d.psd", ""}} {
		if got := formats.FromExt(c.in); got != c.want {
			t.Errorf("FromExt(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
