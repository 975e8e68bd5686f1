package server_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

type editReply struct {
	ID, AssetID, Name string
	ParentID          *string
	Params            map[string]any
	AppliedAt         *time.Time
	JobID             string
}

// editFiles is the size of an asset's edit_preview and edit_thumbnail, as
// the files route lists them.
func (a *app) editFiles(key string, asset uuid.UUID) (preview, thumb [2]int) {
	a.t.Helper()
	r := a.do("GET", "/v1/assets/"+asset.String()+"/files", key, nil)
	expect(a.t, r, 200, "")
	var out struct {
		Files []struct {
			Kind              string
			WidthPx, HeightPx int
		}
	}
	json.Unmarshal(r.body, &out)
	for _, f := range out.Files {
		switch f.Kind {
		case "edit_preview":
			preview = [2]int{f.WidthPx, f.HeightPx}
		case "edit_thumbnail":
			thumb = [2]int{f.WidthPx, f.HeightPx}
		}
	}
	return preview, thumb
}

func TestEditsAndApplyTo(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.startWorker()
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	_, ups := a.uploadAll(key, project, corpus(t, "photos/kite-2560x1600.jpg", "photos/path-2560x1600.jpg", "bad/truncated-progressive.jpg"))
	kite, path, broken := uuid.MustParse(ups[0].AssetID), uuid.MustParse(ups[1].AssetID), uuid.MustParse(ups[2].AssetID)
	waitCount(t, a, "ingest over", 3, `SELECT count(*) FROM assets WHERE project_id = $1 AND status IN ('cull', 'search', 'ai', 'failed')`, project)
	edits := "/v1/assets/" + kite.String() + "/edits"

	r := a.do("POST", edits, key, map[string]any{"name": "Warm", "params": map[string]any{
		"exposure": 0.5, "temperature": 800, "rotate": 90, "crop": map[string]any{"x": 0, "y": 0, "w": 0.5, "h": 1}}})
	expect(t, r, 201, "")
	first := decode[editReply](t, r)
	if first.Name != "Warm" || first.Params["rotate"] != 90.0 || first.JobID == "" || first.AppliedAt != nil {
		t.Fatalf("new edit: %s", r.body)
	}
	waitCount(t, a, "the edit rendered", 1, `SELECT count(*) FROM jobs WHERE id = $1 AND status = 'done'`, first.JobID)
	// The left half of a 2560x1600 photo, turned: 1600x1280.
	if preview, thumb := a.editFiles(key, kite); preview != [2]int{1600, 1280} || thumb != [2]int{320, 256} {
		t.Fatalf("edit files: preview %v thumbnail %v", preview, thumb)
	}
	r = a.do("GET", "/v1/edits/"+first.ID, key, nil)
	expect(t, r, 200, "")
	got := decode[editReply](t, r)
	if got.AppliedAt == nil {
		t.Fatalf("a rendered edit has no appliedAt: %s", r.body)
	}

	// Bad input changes nothing, and other people see nothing.
	bob := a.user("bob@example.org", false)
	for _, c := range []struct {
		body  any
		field string
	}{
		{map[string]any{"params": map[string]any{"sharpen": 1}}, "params.sharpen"},
		{map[string]any{"params": map[string]any{"crop": map[string]any{"x": 0.8, "y": 0, "w": 0.5, "h": 1}}}, "params.crop"},
		{map[string]any{"params": map[string]any{"exposure": 9}}, "params.exposure"},
		{map[string]any{"name": "x"}, "params"},
		{map[string]any{"params": map[string]any{}, "parentId": uuid.New()}, "parentId"},
	} {
		r := a.do("POST", edits, key, c.body)
		expect(t, r, 400, "validation_failed")
		if fields(t, r)[c.field] == nil {
			t.Errorf("%v: fields %v, want %s", c.body, fields(t, r), c.field)
		}
	}
	expect(t, a.do("GET", edits, bob, nil), 404, "not_found")
	expect(t, a.do("GET", "/v1/edits/"+first.ID, bob, nil), 404, "not_found")
	expect(t, a.do("POST", "/v1/edits/"+first.ID+"/applyTo", bob, map[string]any{"assetIds": []uuid.UUID{path}, "mode": "create_versions"}), 404, "not_found")
	other := a.newProject(key)
	_, theirs := a.uploadAll(key, other, corpus(t, "photos/wood.jpg"))
	applyTo := func(body any) reply { return a.do("POST", "/v1/edits/"+first.ID+"/applyTo", key, body) }
	expect(t, applyTo(map[string]any{"assetIds": []string{path.String(), theirs[0].AssetID}, "mode": "create_versions"}), 400, "validation_failed")
	expect(t, applyTo(map[string]any{"assetIds": []uuid.UUID{path}, "mode": "replace"}), 400, "validation_failed")
	expect(t, applyTo(map[string]any{"assetIds": []uuid.UUID{}, "mode": "create_versions"}), 400, "validation_failed")
	if n := a.count(`SELECT count(*) FROM edit_versions`); n != 1 {
		t.Fatalf("%d versions after refused requests, want 1", n)
	}

	// The same params onto the other photos as one batch: the broken file's
	// job fails with a reason, the others render.
	r = applyTo(map[string]any{"assetIds": []uuid.UUID{path, broken}, "mode": "create_versions", "name": "Warm too"})
	expect(t, r, 202, "")
	batch := decode[queued](t, r).BatchID
	a.waitBatch(key, batch, "partial")
	if preview, _ := a.editFiles(key, path); preview != [2]int{1600, 1280} {
		t.Fatalf("applied edit on the second photo: %v", preview)
	}
	if n := a.count(`SELECT count(*) FROM jobs WHERE batch_id = $1 AND status = 'failed' AND asset_id = $2 AND error_code IS NOT NULL`, batch, broken); n != 1 {
		t.Fatal("the broken file's edit did not fail with a reason")
	}

	// overwrite_latest changes each asset's newest version instead of adding one.
	r = a.do("POST", edits, key, map[string]any{"params": map[string]any{"rotate": 180}, "parentId": first.ID})
	expect(t, r, 201, "")
	second := decode[editReply](t, r)
	expect(t, a.do("POST", "/v1/edits/"+second.ID+"/applyTo", key, map[string]any{"assetIds": []uuid.UUID{path}, "mode": "overwrite_latest"}), 202, "")
	if n := a.count(`SELECT count(*) FROM edit_versions WHERE asset_id = $1`, path); n != 1 {
		t.Fatalf("overwrite_latest left %d versions, want 1", n)
	}
	if n := a.count(`SELECT count(*) FROM edit_versions WHERE asset_id = $1 AND params->>'rotate' = '180'`, path); n != 1 {
		t.Fatal("overwrite_latest did not change the latest version")
	}
	r = a.do("GET", edits, key, nil)
	list := decode[struct{ Items []editReply }](t, r)
	if len(list.Items) != 2 || list.Items[1].ParentID == nil || *list.Items[1].ParentID != first.ID {
		t.Fatalf("versions of the first photo: %s", r.body)
	}
}

// An edit needs an original to render onto: an upload not finalized, or a
// duplicate whose bytes were let go, is refused at once, as :reprocess
// refuses them, rather than failing minutes later in the worker.
func TestEditsNeedAFinalizedOriginal(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	_, ups := a.uploadAll(key, project, corpus(t, "photos/wood.jpg"))
	ready := ups[0].AssetID
	_, again := a.uploadAll(key, project, corpus(t, "photos/wood.jpg"))
	duplicate := again[0].AssetID
	pending := a.prepare(key, project, corpus(t, "photos/dune.jpg"))[0].AssetID
	// Finalize discards the bytes of an upload whose checksum does not match.
	storm := corpus(t, "photos/storm.jpg")
	up := a.prepare(key, project, storm)
	expect(t, a.put(up[0].UploadURL, up[0].Headers, storm[0].data), 201, "")
	expect(t, a.finalize(key, project, up, []string{strings.Repeat("0", 64)}), 200, "")
	mismatched := up[0].AssetID
	params := map[string]any{"params": map[string]any{"exposure": 0.5}}

	expect(t, a.do("POST", "/v1/assets/"+pending+"/edits", key, params), 409, "not_processable")
	expect(t, a.do("POST", "/v1/assets/"+duplicate+"/edits", key, params), 409, "not_processable")
	expect(t, a.do("POST", "/v1/assets/"+mismatched+"/edits", key, params), 409, "not_processable")
	expect(t, a.do("POST", "/v1/assets/"+mismatched+":reprocess", key, nil), 409, "not_processable")
	r := a.do("POST", "/v1/assets/"+ready+"/edits", key, params)
	expect(t, r, 201, "")
	edit := decode[created](t, r).ID

	r = a.do("POST", "/v1/edits/"+edit+"/applyTo", key, map[string]any{"assetIds": []string{ready, pending, duplicate}, "mode": "create_versions"})
	expect(t, r, 409, "not_processable")
	if got, _ := details(t, r)["assetIds"].([]any); len(got) != 2 || got[0] != pending || got[1] != duplicate {
		t.Fatalf("details %v, want the pending upload and the duplicate named", details(t, r))
	}
	if n := a.count(`SELECT count(*) FROM edit_versions`); n != 1 {
		t.Fatalf("%d versions after refused requests, want 1", n)
	}
	if n := a.count(`SELECT count(*) FROM jobs WHERE type = 'edit:apply'`); n != 1 {
		t.Fatalf("%d render jobs after refused requests, want 1", n)
	}
}

// A crop of a sliver of a pixel (w: 1e-17) made the render's size
// arithmetic overflow and decode the original whole. It is refused, naming
// the side: against the photo's own size once ingest measured it, and
// before that against the longest photo MAX_PIXELS lets in.
func TestEditCropOfLessThanAPixelIsRefused(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	_, ups := a.uploadAll(key, project, corpus(t, "photos/kite-2560x1600.jpg"))
	edits := "/v1/assets/" + ups[0].AssetID + "/edits"
	crop := func(w, h float64) map[string]any {
		return map[string]any{"params": map[string]any{"crop": map[string]any{"x": 0, "y": 0, "w": w, "h": h}}}
	}
	refused := func(body map[string]any, field string) {
		t.Helper()
		r := a.do("POST", edits, key, body)
		expect(t, r, 400, "validation_failed")
		if f := fields(t, r); f[field] == nil || len(f) != 1 {
			t.Errorf("%v: fields %v, want %s alone", body, f, field)
		}
	}

	// Not ingested yet: its size is not known.
	refused(crop(1e-17, 1), "params.crop.w")
	refused(crop(1, 1e-17), "params.crop.h")
	expect(t, a.do("POST", edits, key, crop(1e-6, 1)), 201, "")

	a.startWorker()
	waitCount(t, a, "ingest over", 1, `SELECT count(*) FROM assets WHERE id = $1 AND width_px = 2560 AND height_px = 1600`, ups[0].AssetID)
	refused(crop(1e-6, 1), "params.crop.w")
	refused(crop(1, 0.5/1600), "params.crop.h")
	expect(t, a.do("POST", edits, key, crop(1.0/2560, 1.0/1600)), 201, "")
	if n := a.count(`SELECT count(*) FROM edit_versions`); n != 2 {
		t.Fatalf("%d versions, want the 2 accepted", n)
	}
}
