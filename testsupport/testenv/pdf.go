package testenv

import (
	"bytes"
	"image"
	"image/jpeg"
	"testing"

	"github.com/pdfcpu/pdfcpu/pkg/api"
)

func init() { api.DisableConfigDir() }

// PDFPages checks that data is a valid PDF and returns the pixel size of
// each page's JPEG image, in page order. A page without exactly one JPEG
// fails the test.
func PDFPages(t testing.TB, data []byte) []image.Point {
	t.Helper()
	if err := api.Validate(bytes.NewReader(data), nil); err != nil {
		t.Fatalf("not a valid PDF: %v", err)
	}
	n, err := api.PageCount(bytes.NewReader(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	pages, err := api.ExtractImagesRaw(bytes.NewReader(data), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sizes := make([]image.Point, n)
	seen := make([]int, n)
	for _, images := range pages {
		for _, img := range images {
			if img.PageNr < 1 || img.PageNr > n {
				t.Fatalf("an image on page %d of %d", img.PageNr, n)
			}
			cfg, err := jpeg.DecodeConfig(img)
			if err != nil {
				t.Fatalf("page %d: its image is not a JPEG: %v", img.PageNr, err)
			}
			sizes[img.PageNr-1] = image.Pt(cfg.Width, cfg.Height)
			seen[img.PageNr-1]++
		}
	}
	for i, c := range seen {
		if c != 1 {
			t.Fatalf("page %d has %d images, want 1", i+1, c)
		}
	}
	return sizes
}
