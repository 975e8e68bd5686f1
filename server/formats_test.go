package server_test

import (
	"encoding/json"
	"testing"
)

// TestPrepareFormats accepts phone and camera formats by content type or,
// when the browser sends a generic type, by extension, and records the
// format's own content type.
func TestPrepareFormats(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	files := []struct{ name, declared, want string }{
		{"IMG_0001.HEIC", "image/heic", "image/heic"},
		{"IMG_0002.heif", "image/heif", "image/heic"},
		{"C0001.HIF", "", "image/heic"},
		{"PXL_1.avif", "image/avif", "image/avif"},
		{"bikes.jxl", "", "image/jxl"},
		{"IMG_1.CR3", "application/octet-stream", "image/x-canon-cr3"},
		{"DSC_1.NEF", "", "image/x-nikon-nef"},
		{"R0001.DNG", "image/x-adobe-dng", "image/x-adobe-dng"},
		{"P1.RW2", "application/octet-stream", "image/x-panasonic-rw2"},
	}
	var in []map[string]any
	for _, f := range files {
		in = append(in, map[string]any{"filename": f.name, "byteSize": 10, "contentType": f.declared})
	}
	r := a.do("POST", "/v1/projects/"+project+"/assets:prepareUpload", key, map[string]any{"files": in})
	expect(t, r, 200, "")
	var out struct {
		Uploads []struct {
			Headers map[string]string `json:"headers"`
		} `json:"uploads"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil || len(out.Uploads) != len(files) {
		t.Fatalf("answer %s: %v", r.body, err)
	}
	for i, f := range files {
		if got := out.Uploads[i].Headers["Content-Type"]; got != f.want {
			t.Errorf("%s sent as %q: content type %q, want %q", f.name, f.declared, got, f.want)
		}
	}
}
