package server_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/uuid"

	"lightbox/store"
)

// saveFaces records faces as the worker's asset:faces does.
func saveFaces(t *testing.T, a *app, asset uuid.UUID, faces ...store.Face) bool {
	t.Helper()
	saved, err := a.env.Store.SaveFaces(context.Background(), store.FaceScan{AssetID: asset, Model: "blazeface test",
		Width: 100, Height: 80}, faces)
	if err != nil {
		t.Fatal(err)
	}
	return saved != nil
}

func open(v float64) *float64 { return &v }

func TestFacesOptInDetailFiltersAndSwitchOff(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	ids := processed(t, a, key, project, []string{"Canon", "Canon", "Canon"},
		[][]float32{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}})
	blink, soft, fine := ids[0], ids[1], ids[2]

	// Off by default: nothing is stored, and the detail says so.
	r := a.do("GET", "/v1/projects/"+project, key, nil)
	expect(t, r, 200, "")
	if r.json(t)["detectFaces"] != false {
		t.Fatalf("a new project detects faces: %s", r.body)
	}
	if saveFaces(t, a, blink, store.Face{W: 0.2, H: 0.3, Score: 0.9, Sharpness: 200}) {
		t.Fatal("faces were saved in a project that does not detect them")
	}
	r = a.do("GET", "/v1/assets/"+blink.String()+"/faces", key, nil)
	expect(t, r, 200, "")
	if f := r.json(t); f["status"] != "off" || f["summary"] != nil || len(f["faces"].([]any)) != 0 {
		t.Fatalf("faces of a project without them: %s", r.body)
	}

	for _, body := range []map[string]any{{"detectFaces": nil}, {"detectFaces": "yes"}} {
		expect(t, a.do("PATCH", "/v1/projects/"+project, key, body), 400, "")
	}
	r = a.do("PATCH", "/v1/projects/"+project, key, map[string]any{"detectFaces": true})
	expect(t, r, 200, "")
	if r.json(t)["detectFaces"] != true {
		t.Fatalf("PATCH detectFaces: %s", r.body)
	}
	r = a.do("GET", "/v1/assets/"+fine.String()+"/faces", key, nil)
	expect(t, r, 200, "")
	if r.json(t)["status"] != "pending" {
		t.Fatalf("faces not looked for yet: %s", r.body)
	}

	closed := store.Face{X: 0.1, Y: 0.1, W: 0.2, H: 0.3, Score: 0.9, EyeLeft: open(0.05), EyeRight: open(0.08),
		Yaw: open(3), Pitch: open(-2), Roll: open(1), Landmarks: json.RawMessage(`{"nose":{"x":0.2,"y":0.25}}`),
		Sharpness: 180, EyesClosed: true}
	sharp := store.Face{X: 0.5, Y: 0.1, W: 0.2, H: 0.3, Score: 0.8, EyeLeft: open(0.3), EyeRight: open(0.35), Sharpness: 240}
	blurred := sharp
	blurred.Sharpness, blurred.OutOfFocus = 20, true
	for id, faces := range map[uuid.UUID][]store.Face{blink: {closed, sharp}, soft: {blurred}, fine: {sharp}} {
		if !saveFaces(t, a, id, faces...) {
			t.Fatal("faces were not saved in a project that detects them")
		}
	}
	// Saved again, the same rows.
	saveFaces(t, a, blink, closed, sharp)

	r = a.do("GET", "/v1/assets/"+blink.String()+"/faces", key, nil)
	expect(t, r, 200, "")
	var detail struct {
		Status  string
		Summary struct {
			Count, EyesClosed, OutOfFocus int
			MinFaceSharpness              float64
		}
		Faces []struct {
			Box         struct{ X, Y, W, H float64 }
			EyeOpenness *struct{ Left, Right float64 }
			HeadAngles  *struct{ Yaw float64 }
			Landmarks   map[string]any
			Sharpness   float64
			EyesClosed  bool
		}
	}
	json.Unmarshal(r.body, &detail)
	if detail.Status != "done" || detail.Summary.Count != 2 || detail.Summary.EyesClosed != 1 || detail.Summary.MinFaceSharpness != 180 ||
		len(detail.Faces) != 2 || !detail.Faces[0].EyesClosed || detail.Faces[0].EyeOpenness == nil ||
		detail.Faces[0].HeadAngles.Yaw != 3 || detail.Faces[0].Landmarks["nose"] == nil || detail.Faces[1].HeadAngles != nil {
		t.Fatalf("faces of the blink: %s", r.body)
	}

	r = a.do("GET", "/v1/assets/"+soft.String(), key, nil)
	expect(t, r, 200, "")
	if f, _ := r.json(t)["faces"].(map[string]any); f["count"] != 1.0 || f["outOfFocus"] != 1.0 || f["minFaceSharpness"] != 20.0 {
		t.Fatalf("Asset.faces of the soft one: %s", r.body)
	}

	list := func(query string) []string {
		t.Helper()
		r := a.do("GET", "/v1/projects/"+project+"/assets?"+query, key, nil)
		expect(t, r, 200, "")
		page := decode[struct{ Items []struct{ ID string } }](t, r)
		var out []string
		for _, it := range page.Items {
			out = append(out, it.ID)
		}
		slices.Sort(out)
		return out
	}
	search := func(filters map[string]any) []string {
		t.Helper()
		r := a.do("POST", "/v1/projects/"+project+"/search", key, map[string]any{"filters": filters})
		expect(t, r, 200, "")
		res := decode[struct{ Results []struct{ AssetID string } }](t, r)
		var out []string
		for _, h := range res.Results {
			out = append(out, h.AssetID)
		}
		slices.Sort(out)
		return out
	}
	sorted := func(ids ...uuid.UUID) []string {
		var out []string
		for _, id := range ids {
			out = append(out, id.String())
		}
		slices.Sort(out)
		return out
	}
	for _, c := range []struct {
		query   string
		filters map[string]any
		want    []string
	}{
		{"eyesClosed=true", map[string]any{"eyesClosed": true}, sorted(blink)},
		{"eyesClosed=false", map[string]any{"eyesClosed": false}, sorted(soft, fine)},
		{"faceOutOfFocus=true", map[string]any{"faceOutOfFocus": true}, sorted(soft)},
		{"faceOutOfFocus=false&eyesClosed=false", map[string]any{"faceOutOfFocus": false, "eyesClosed": false}, sorted(fine)},
	} {
		if got := list(c.query); !slices.Equal(got, c.want) {
			t.Errorf("list %s: %v, want %v", c.query, got, c.want)
		}
		if got := search(c.filters); !slices.Equal(got, c.want) {
			t.Errorf("search %v: %v, want %v", c.filters, got, c.want)
		}
	}
	r = a.do("GET", "/v1/projects/"+project+"/assets?eyesClosed=maybe", key, nil)
	expect(t, r, 400, "validation_failed")

	// Switching faces off deletes them.
	expect(t, a.do("PATCH", "/v1/projects/"+project, key, map[string]any{"detectFaces": false}), 200, "")
	var left int
	if err := a.env.DB.Get(&left, `SELECT (SELECT count(*) FROM face_scans) + (SELECT count(*) FROM faces)`); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Fatalf("%d face rows left after faces were switched off", left)
	}
	r = a.do("GET", "/v1/assets/"+blink.String(), key, nil)
	expect(t, r, 200, "")
	if f, ok := r.json(t)["faces"]; !ok || f != nil {
		t.Fatalf("Asset.faces after faces were switched off: %s", r.body)
	}
	if got := list("eyesClosed=true"); len(got) != 0 {
		t.Errorf("blinks listed after faces were switched off: %v", got)
	}
}

func TestFacesSwitchedOnRecordsOneScanOfThePhotosInTheProject(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project, other := a.newProject(key), a.newProject(key)
	processed(t, a, key, project, []string{"Canon", "Canon"}, [][]float32{{1, 0, 0}, {0, 1, 0}})
	scans := func(p string) int {
		return a.count(`SELECT count(*) FROM jobs WHERE project_id = $1 AND type = 'project:faces'`, p)
	}
	before := a.do("GET", "/v1/projects/"+project, key, nil)
	expect(t, before, 200, "")

	r := a.do("PATCH", "/v1/projects/"+project, key, map[string]any{"detectFaces": true})
	expect(t, r, 200, "")
	if n := scans(project); n != 1 {
		t.Fatalf("%d project:faces jobs after switching faces on", n)
	}
	// The answer keeps its shape.
	got, was := r.json(t), before.json(t)
	for k := range was {
		if _, ok := got[k]; !ok {
			t.Errorf("PATCH's answer lost %q: %s", k, r.body)
		}
	}
	if len(got) != len(was) {
		t.Errorf("PATCH's answer has %d fields, GET's %d: %s", len(got), len(was), r.body)
	}

	// On already, or another field changed: nothing more.
	expect(t, a.do("PATCH", "/v1/projects/"+project, key, map[string]any{"detectFaces": true}), 200, "")
	expect(t, a.do("PATCH", "/v1/projects/"+project, key, map[string]any{"title": "Renamed"}), 200, "")
	if n := scans(project); n != 1 {
		t.Fatalf("%d project:faces jobs after switching faces on twice", n)
	}
	// Off deletes the faces, so on again looks for them again.
	expect(t, a.do("PATCH", "/v1/projects/"+project, key, map[string]any{"detectFaces": false}), 200, "")
	expect(t, a.do("PATCH", "/v1/projects/"+project, key, map[string]any{"detectFaces": true}), 200, "")
	if n := scans(project); n != 2 {
		t.Fatalf("%d project:faces jobs after switching faces on, off and on", n)
	}

	// A project that keeps faces off, or another user's, records none.
	expect(t, a.do("PATCH", "/v1/projects/"+other, key, map[string]any{"detectFaces": false}), 200, "")
	eve := a.user("eve@example.org", false)
	expect(t, a.do("PATCH", "/v1/projects/"+other, eve, map[string]any{"detectFaces": true}), 404, "not_found")
	if n := scans(other); n != 0 {
		t.Fatalf("%d project:faces jobs in a project without faces", n)
	}
}
