package worker_test

import (
	"archive/zip"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"lightbox/render"
	"lightbox/store"
)

// exifJSON is what exiftool reads of the files in dir, by file name.
func exifJSON(t *testing.T, dir string, names ...string) map[string]map[string]any {
	t.Helper()
	if _, err := exec.LookPath("exiftool"); err != nil {
		t.Fatal("exiftool is not installed (libimage-exiftool-perl; make test installs it)")
	}
	args := []string{"-j", "-XMP:Rating", "-XMP:Label", "-XMP:Subject", "-XMP:HierarchicalSubject", "-XMP:Title",
		"-XMP:City", "-XMP:PickLabel", "-XMP:Exposure2012", "-XMP:ColorTemperature"}
	for _, n := range names {
		args = append(args, filepath.Join(dir, n))
	}
	out, err := exec.Command("exiftool", args...).Output()
	if err != nil {
		t.Fatalf("exiftool: %v\n%s", err, out)
	}
	var rows []map[string]any
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("exiftool's JSON: %v\n%s", err, out)
	}
	byName := map[string]map[string]any{}
	for _, r := range rows {
		byName[filepath.Base(r["SourceFile"].(string))] = r
	}
	return byName
}

// unzip writes an archive's entries to a new directory and lists them.
func unzip(t *testing.T, z *zip.Reader) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	var names []string
	for _, f := range z.File {
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.Name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, f.Name)
	}
	return dir, names
}

// An export with xmp carries the owner's cull to an editor: a sidecar
// beside each original that exiftool reads the stars, reject, label,
// keywords and captions from, named as Lightroom or darktable look for
// it, merged into the sidecar the photo came with; in a rendered preset,
// the same fields inside each JPEG.
func TestExportWritesTheCullAsXMP(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ctx := context.Background()
	project := h.project()
	kept := h.ready(project, "photos/wood.jpg")
	dropped := h.ready(project, "photos/dune.jpg")
	if _, err := h.env.Store.Rate(ctx, h.owner, store.RatingChange{AssetID: kept, Rating: new(4), ColorLabel: new("red"), Picked: new(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.env.Store.Rate(ctx, h.owner, store.RatingChange{AssetID: dropped, Rejected: new(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.env.DB.Exec(`UPDATE assets SET keywords = '{forest,autumn}', iptc = '{"title": "Old wood", "city": "Lyon"}' WHERE id = $1`, kept); err != nil {
		t.Fatal(err)
	}
	// The photographer's own sidecar came with the kept photo: Lightroom's
	// develop settings, which the export's sidecar keeps.
	own := []byte(`<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
<rdf:Description rdf:about="" xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmlns:crs="http://ns.adobe.com/camera-raw-settings/1.0/"
 xmp:Rating="2" crs:Exposure2012="+0.50" crs:Temperature="5200"/></rdf:RDF></x:xmpmeta>`)
	if _, err := h.app().PutSidecar(ctx, slog.Default(), h.blobs, h.owner, kept, own); err != nil {
		t.Fatal(err)
	}
	checkKept := func(t *testing.T, got map[string]any, naming string) {
		t.Helper()
		if got["Rating"] != float64(4) || got["Label"] != "Red" || got["Title"] != "Old wood" || got["City"] != "Lyon" || got["PickLabel"] != float64(3) {
			t.Errorf("%s: the kept photo reads %v", naming, got)
		}
		subjects, _ := got["Subject"].([]any)
		if !slices.Contains(subjects, any("forest")) || !slices.Contains(subjects, any("autumn")) {
			t.Errorf("%s: keywords read %v", naming, got["Subject"])
		}
	}

	for _, c := range []struct {
		naming, keptSidecar, droppedSidecar string
	}{
		{"", "wood.xmp", "dune.xmp"},
		{render.NamingDarktable, "wood.jpg.xmp", "dune.jpg.xmp"},
	} {
		id, task := h.newExport(project, render.PresetFullRes, render.Settings{IncludeNotReady: true, XMP: true, XMPNaming: c.naming}, kept, dropped)
		if err := h.runExport(ctx, task); err != nil {
			t.Fatal(err)
		}
		dir, names := unzip(t, h.archive(id))
		if want := []string{"wood.jpg", c.keptSidecar, "dune.jpg", c.droppedSidecar}; !slices.Equal(names, want) {
			t.Fatalf("%q: entries %v, want %v", c.naming, names, want)
		}
		got := exifJSON(t, dir, c.keptSidecar, c.droppedSidecar)
		checkKept(t, got[c.keptSidecar], c.naming)
		if r := got[c.keptSidecar]; r["Exposure2012"] != "+0.50" || r["ColorTemperature"] != float64(5200) {
			t.Errorf("%q: the photographer's develop settings read %v %v", c.naming, r["Exposure2012"], r["ColorTemperature"])
		}
		if r := got[c.droppedSidecar]; r["Rating"] != float64(-1) || r["PickLabel"] != float64(1) {
			t.Errorf("%q: the rejected photo reads %v", c.naming, r)
		}
		original, err := os.ReadFile(filepath.Join(dir, "wood.jpg"))
		if err != nil || !slices.Equal(original, readCorpus(t, "photos/wood.jpg")) {
			t.Errorf("%q: the original in the zip is not the photo as uploaded (%v)", c.naming, err)
		}
	}

	// A rendered preset embeds the packet; no sidecar goes beside it.
	id, task := h.newExport(project, render.PresetWeb, render.Settings{LongEdge: 320, Quality: 60, IncludeNotReady: true, XMP: true}, kept)
	if err := h.runExport(ctx, task); err != nil {
		t.Fatal(err)
	}
	dir, names := unzip(t, h.archive(id))
	if !slices.Equal(names, []string{"wood.jpg"}) {
		t.Fatalf("web export entries %v", names)
	}
	checkKept(t, exifJSON(t, dir, "wood.jpg")["wood.jpg"], "web")

	// Without xmp, nothing of the cull is written.
	id, task = h.newExport(project, render.PresetFullRes, render.Settings{IncludeNotReady: true}, kept)
	if err := h.runExport(ctx, task); err != nil {
		t.Fatal(err)
	}
	if _, names := unzip(t, h.archive(id)); !slices.Equal(names, []string{"wood.jpg"}) {
		t.Fatalf("an export without xmp has %v", names)
	}
}
