package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/assist"
	"lightbox/store"
	"lightbox/testsupport/seed"
	"lightbox/testsupport/testenv"
)

// culler is a person with projects of processed photos whose stored
// signals the test chooses, as ingest would have measured them.
type culler struct {
	a     *app
	key   string
	owner uuid.UUID
}

func newCuller(t testing.TB, a *app, email string) culler {
	t.Helper()
	ctx := context.Background()
	u, err := a.env.Store.CreateUser(ctx, email, false)
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := a.env.Store.CreateAPIKey(ctx, u.ID, "test")
	if err != nil {
		t.Fatal(err)
	}
	return culler{a: a, key: key, owner: u.ID}
}

// signals are what a photo's stored quality says of it.
type signals struct{ focus, motion, ev, detail float64 }

// Photos as the assistant judges them, placed by its thresholds
// (assist.Threshold) rather than by their figures, which calibration
// moves: blurred is blurry from strictness 0.2 up (learning moves a
// criterion 0.25 at most), smeared has motion blur at the default,
// dark and misfired are warned of at any strictness, sharp at none.
var (
	sharp    = signals{focus: at(assist.Blurry, 1) + 30, motion: at(assist.MotionBlur, 1) / 4, detail: 0.5}
	blurred  = signals{focus: at(assist.Blurry, 0.2), motion: sharp.motion, detail: 0.5}
	smeared  = signals{focus: sharp.focus, motion: (at(assist.MotionBlur, 0) + at(assist.MotionBlur, 0.5)) / 2, detail: 0.5}
	dark     = signals{focus: sharp.focus, motion: sharp.motion, ev: -(at(assist.Exposure, 0) + 2), detail: 0.5}
	misfired = signals{focus: sharp.focus, motion: sharp.motion, detail: at(assist.Misfire, 0) / 2}
)

func at(criterion string, strictness float64) float64 { return assist.Threshold(criterion, strictness) }

// between is a photo blurry at strictness strict but not at lenient.
func between(lenient, strict float64) *signals {
	return &signals{focus: (at(assist.Blurry, lenient) + at(assist.Blurry, strict)) / 2, motion: sharp.motion, detail: 0.5}
}

// shoot makes a project that detects faces, with photos cull-ready
// photos measured as given; a nil entry is a photo from before the
// signals (its quality has no detail).
func (u culler) shoot(t *testing.T, measured ...*signals) (project uuid.UUID, photos []uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	p, err := u.a.env.Store.CreateProject(ctx, u.owner, "Shoot", "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	on := true
	if _, err := u.a.env.Store.UpdateProject(ctx, u.owner, p.ID, store.ProjectInput{DetectFaces: &on}); err != nil {
		t.Fatal(err)
	}
	statuses := make([]string, len(measured))
	for i := range statuses {
		statuses[i] = store.AssetCull
	}
	photos = u.a.env.AssetsIn(t, u.owner, p.ID, statuses...)
	for i, s := range measured {
		quality := `{"sharpness": 120}`
		if s != nil {
			quality = fmt.Sprintf(`{"sharpness": 120, "focus": %g, "motionBlur": %g, "exposure": %g, "detail": %g, "warnings": []}`,
				s.focus, s.motion, s.ev, s.detail)
		}
		if _, err := u.a.env.DB.Exec(`UPDATE assets SET quality = $2 WHERE id = $1`, photos[i], quality); err != nil {
			t.Fatal(err)
		}
	}
	return p.ID, photos
}

// burst is a burst of photos as a cluster run makes it.
func burst(photos ...uuid.UUID) store.NewCluster {
	c := group("burst", photos...)
	c.Kind = "burst"
	return c
}

// groups stores cs as project's groups, as a cluster run does.
func (u culler) groups(t testing.TB, project uuid.UUID, cs ...store.NewCluster) {
	t.Helper()
	run := u.a.env.StartClusterRun(t, project)
	if _, stored, err := u.a.env.Store.ReplaceClusters(context.Background(), project, run, cs, nil); !stored || err != nil {
		t.Fatalf("groups: stored %v, %v", stored, err)
	}
}

type verdict struct {
	AssetID uuid.UUID
	Score   int
	Reasons []struct{ Code, Message string }
}

type suggestion struct {
	Rejects, Picks []verdict
	Counts         struct {
		Photos, Rejects, Picks, LeftAlone, Unjudged int
		Buckets                                     map[string]int
	}
	Strictness map[string]*float64
	Actions    []map[string]any
}

func (u culler) suggest(t *testing.T, project uuid.UUID, body any) suggestion {
	t.Helper()
	r := u.a.do("POST", "/v1/projects/"+project.String()+"/cull:suggest", u.key, body)
	expect(t, r, 200, "")
	return decode[suggestion](t, r)
}

// apply sends actions to cull:applyAction and returns the photos it
// updated and those it left alone.
func (u culler) apply(t testing.TB, project uuid.UUID, actions ...map[string]any) (updated, leftAlone []uuid.UUID) {
	t.Helper()
	r := u.a.do("POST", "/v1/projects/"+project.String()+"/cull:applyAction", u.key, map[string]any{"actions": actions})
	expect(t, r, 200, "")
	out := decode[struct{ UpdatedAssetIDs, LeftAloneAssetIDs []uuid.UUID }](t, r)
	if out.LeftAloneAssetIDs == nil {
		t.Fatalf("leftAloneAssetIds is not a list: %s", r.body)
	}
	return out.UpdatedAssetIDs, out.LeftAloneAssetIDs
}

// codes are each verdict's reason codes, by photo.
func codes(vs []verdict) map[uuid.UUID]string {
	out := map[uuid.UUID]string{}
	for _, v := range vs {
		var cs []string
		for _, r := range v.Reasons {
			if r.Message == "" {
				cs = append(cs, "(no message)")
			}
			cs = append(cs, r.Code)
		}
		out[v.AssetID] = strings.Join(cs, ",")
	}
	return out
}

func TestCullSuggestJudgesLeavesHandDecisionsAndPicksInBursts(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	u := newCuller(t, a, "ana@example.org")
	// The burst's frames score best to worst, the last blurry only at 1;
	// its twin, a duplicate of the last, scores better than it.
	frame := func(s signals, motion float64) *signals { s.motion = motion; return &s }
	project, ps := u.shoot(t, &sharp, &blurred, &smeared, &dark, &misfired, nil, &sharp,
		frame(sharp, 0), frame(sharp, sharp.motion*2), frame(*between(0.5, 1), sharp.motion*3), &blurred, frame(sharp, sharp.motion*2), &sharp)
	keeper, blurry, smear, under, misfire, unjudged, blink, best, second, third, kept, twin := ps[0], ps[1], ps[2], ps[3], ps[4], ps[5], ps[6], ps[7], ps[8], ps[9], ps[10], ps[11]
	blown := ps[12]
	crisp := at(assist.FaceSoft, 1) + 10
	saveFaces(t, a, blink, store.Face{W: 0.2, H: 0.3, Score: 0.9, Sharpness: crisp, EyesClosed: true},
		store.Face{W: 0.2, H: 0.3, Score: 0.9, Sharpness: crisp, EyesClosed: true})
	saveFaces(t, a, keeper, store.Face{W: 0.2, H: 0.3, Score: 0.9, Sharpness: crisp})
	// A portrait whose frame reads well exposed and whose face is blown.
	saveFaces(t, a, blown, store.Face{W: 0.2, H: 0.3, Score: 0.9, Sharpness: crisp, Clipped: new(0.8)})
	u.groups(t, project, burst(best, second, third), group("twins", third, twin))
	// Picked by hand, though blurred: the assistant leaves it alone.
	u.apply(t, project, map[string]any{"assetId": kept, "picked": true})

	sg := u.suggest(t, project, nil) // no body: every default
	want := map[uuid.UUID]string{blurry: "blurry", smear: "motion_blur", under: "underexposed", misfire: "misfire", blink: "eyes_closed",
		blown: "overexposed"}
	if got := codes(sg.Rejects); !maps.Equal(got, want) {
		t.Fatalf("rejects %v, want %v", got, want)
	}
	c := sg.Counts
	if c.Photos != 13 || c.Rejects != 6 || c.Picks != 0 || c.LeftAlone != 1 || c.Unjudged != 1 || len(sg.Picks) != 0 {
		t.Fatalf("counts %+v", c)
	}
	if b := c.Buckets; b["blurry"] != 2 || b["motion_blur"] != 1 || b["underexposed"] != 1 || b["overexposed"] != 1 ||
		b["misfire"] != 1 || b["eyes_closed"] != 1 || b["face_soft"] != 0 || len(b) != 7 {
		t.Fatalf("buckets %v: the hand-picked blurred photo counts, every code is there", b)
	}
	// The blurred photo picked by hand taught blurry to be more lenient.
	for _, crit := range assist.Criteria {
		if v := sg.Strictness[crit]; v == nil || (*v == 0.5) == (crit == assist.Blurry) || *v > 0.5 {
			t.Fatalf("strictness %s = %v: want the default 0.5, blurry below it", crit, v)
		}
	}
	if len(sg.Actions) != 6 {
		t.Fatalf("actions %v, want one a reject", sg.Actions)
	}
	for _, act := range sg.Actions {
		if act["assisted"] != true || act["rejected"] != true || len(act) != 3 {
			t.Fatalf("action %v, want {assetId, rejected: true, assisted: true}", act)
		}
	}

	// Criteria off, or stricter and more lenient than the default.
	sg = u.suggest(t, project, map[string]any{"strictness": map[string]any{"blurry": "off", "eyesClosed": nil, "exposure": 0}})
	// A face 80 % blown is over even at the most lenient exposure.
	want = map[uuid.UUID]string{smear: "motion_blur", misfire: "misfire", under: "underexposed", blown: "overexposed"}
	if got := codes(sg.Rejects); !maps.Equal(got, want) {
		t.Fatalf("with blurry and eyesClosed off: rejects %v, want %v", got, want)
	}
	if sg.Strictness["blurry"] != nil || sg.Strictness["eyesClosed"] != nil || *sg.Strictness["exposure"] != 0 || *sg.Strictness["misfire"] != 0.5 {
		t.Fatalf("strictness %v", sg.Strictness)
	}
	sg = u.suggest(t, project, map[string]any{"strictness": map[string]any{"blurry": 1}})
	if got := codes(sg.Rejects); got[third] != "blurry" || got[keeper] != "" {
		t.Fatalf("at blurry 1 the burst's last frame is blurred, the keeper not: %v", got)
	}

	// The best of the burst picked, the others rejected as not among the
	// best: the twin too, the duplicate group and the burst sharing a photo.
	sg = u.suggest(t, project, map[string]any{"keepPerGroup": 1, "mark": "stars"})
	if got := codes(sg.Picks); !maps.Equal(got, map[uuid.UUID]string{best: "best_of_group"}) {
		t.Fatalf("picks %v, want the sharpest of the burst", got)
	}
	if got := codes(sg.Rejects); got[second] != "not_best_of_group" || got[third] != "not_best_of_group" ||
		got[twin] != "not_best_of_group" || got[blurry] != "blurry" {
		t.Fatalf("rejects %v", got)
	}
	for _, act := range sg.Actions {
		if want := map[bool]float64{true: 5, false: 1}[act["assetId"] == best.String()]; act["rating"] != want || act["rejected"] != nil {
			t.Fatalf("action %v, want rating %v", act, want)
		}
	}

	// Asked again after applying, the suggestion is the same and nothing
	// is left to do; the hand decision is still left alone.
	sg = u.suggest(t, project, map[string]any{"keepPerGroup": 1})
	updated, leftAlone := u.apply(t, project, sg.Actions...)
	if len(updated) != 10 || len(leftAlone) != 0 {
		t.Fatalf("applied: updated %v, left alone %v", updated, leftAlone)
	}
	if m := find(a.assetList(u.key, project.String(), ""), second).MyRating; m == nil || !m.Rejected {
		t.Fatalf("an applied reject: %+v", m)
	}
	again := u.suggest(t, project, map[string]any{"keepPerGroup": 1})
	if !maps.Equal(codes(again.Rejects), codes(sg.Rejects)) || !maps.Equal(codes(again.Picks), codes(sg.Picks)) || len(again.Actions) != 0 ||
		again.Counts.LeftAlone != 1 {
		t.Fatalf("asked again: %+v, want the same with no actions", again)
	}
	// Turning blurry off takes back the assistant's own reject of it, not
	// the photographer's pick.
	sg = u.suggest(t, project, map[string]any{"keepPerGroup": 1, "strictness": map[string]any{"blurry": "off"}})
	if len(sg.Actions) != 1 || sg.Actions[0]["assetId"] != blurry.String() || sg.Actions[0]["rejected"] != false ||
		sg.Actions[0]["picked"] != false || sg.Actions[0]["assisted"] != true {
		t.Fatalf("actions %v, want the blurred photo's reject cleared", sg.Actions)
	}

	// An assisted action never overrides a hand decision; a hand change
	// makes the assistant's mark the photographer's.
	updated, leftAlone = u.apply(t, project, map[string]any{"assetId": kept, "rejected": true, "assisted": true},
		map[string]any{"assetId": keeper, "rating": 5, "assisted": true})
	if !slices.Equal(leftAlone, []uuid.UUID{kept}) || !slices.Equal(updated, []uuid.UUID{keeper}) {
		t.Fatalf("updated %v, left alone %v", updated, leftAlone)
	}
	list := a.assetList(u.key, project.String(), "")
	if m := find(list, kept).MyRating; m == nil || !m.Picked || m.Rejected {
		t.Fatalf("the hand-picked photo after an assisted reject: %+v", m)
	}
	r := a.do("POST", "/v1/assets/"+second.String()+"/ratings", u.key, map[string]any{"picked": true})
	expect(t, r, 200, "")
	if got := r.json(t); got["assisted"] != false || got["picked"] != true {
		t.Fatalf("a hand pick over an assisted reject: %s", r.body)
	}
	if sg := u.suggest(t, project, map[string]any{"keepPerGroup": 1}); sg.Counts.LeftAlone != 2 {
		t.Fatalf("left alone %d, want the two hand picks", sg.Counts.LeftAlone)
	}

	// The asset says why too, faces included, at the default strictness.
	r = a.do("GET", "/v1/assets/"+blink.String(), u.key, nil)
	expect(t, r, 200, "")
	var asset struct {
		Quality struct {
			Sharpness float64
			Warnings  []string
			Reasons   []struct{ Code, Message string }
		}
	}
	json.Unmarshal(r.body, &asset)
	if q := asset.Quality; q.Sharpness != 120 || !slices.Equal(q.Warnings, []string{"eyes_closed"}) || len(q.Reasons) != 1 ||
		q.Reasons[0].Code != "eyes_closed" || !strings.Contains(q.Reasons[0].Message, "2 of 2") {
		t.Fatalf("quality %s", r.body)
	}
	page := decode[pageOf[struct {
		ID      uuid.UUID
		Quality struct{ Reasons []struct{ Code string } }
	}]](t, a.do("GET", "/v1/projects/"+project.String()+"/assets?limit=100", u.key, nil))
	for _, item := range page.Items {
		if item.ID == unjudged && len(item.Quality.Reasons) != 0 || item.ID == misfire && fmt.Sprint(item.Quality.Reasons) != "[{misfire}]" {
			t.Fatalf("%s: reasons %v", item.ID, item.Quality.Reasons)
		}
	}
}

func TestCullSuggestRefusesBadFieldsAndOthersProjects(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	u := newCuller(t, a, "ana@example.org")
	project, _ := u.shoot(t, &sharp)
	path := "/v1/projects/" + project.String() + "/cull:suggest"
	for field, body := range map[string]map[string]any{
		"strictness.sharpness": {"strictness": map[string]any{"sharpness": 0.5}},
		"strictness.blurry":    {"strictness": map[string]any{"blurry": 1.5}},
		"strictness.exposure":  {"strictness": map[string]any{"exposure": "lots"}},
		"strictness.misfire":   {"strictness": map[string]any{"misfire": -0.1}},
		"keepPerGroup":         {"keepPerGroup": 11},
		"mark":                 {"mark": "stickers"},
	} {
		r := a.do("POST", path, u.key, body)
		expect(t, r, 400, "validation_failed")
		if f := fields(t, r); f[field] == nil || len(f) != 1 {
			t.Fatalf("%v: fields %v, want %s", body, f, field)
		}
	}
	expect(t, a.do("POST", path, u.key, map[string]any{"keepPerGroup": -1}), 400, "validation_failed")
	expect(t, a.do("POST", path, u.key, map[string]any{"strict": 1}), 400, "invalid_json")

	bob := newCuller(t, a, "bob@example.org")
	expect(t, a.do("POST", path, bob.key, map[string]any{}), 404, "not_found")
	expect(t, a.do("POST", "/v1/projects/"+uuid.NewString()+"/cull:suggest", u.key, map[string]any{}), 404, "not_found")
}

type cullPreferences struct {
	Strictness, Base map[string]*float64
	Adjustments      []struct {
		Criterion      string
		From, To       float64
		Kept, Rejected int
		Message        string
	}
	LearnSince *string
}

func (u culler) preferences(t *testing.T, method string, body any) cullPreferences {
	t.Helper()
	r := u.a.do(method, "/v1/cull/preferences", u.key, body)
	expect(t, r, 200, "")
	return decode[cullPreferences](t, r)
}

func TestCullPreferencesLearnFromHandDecisionsInEveryProject(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	u := newCuller(t, a, "ana@example.org")
	p := u.preferences(t, "GET", nil)
	if *p.Strictness["blurry"] != 0.5 || *p.Base["faceSoft"] != 0.5 || len(p.Adjustments) != 0 || p.LearnSince != nil {
		t.Fatalf("a new person's preferences: %+v", p)
	}

	// Six photos the assistant calls blurry, picked by hand.
	first, ps := u.shoot(t, &blurred, &blurred, &blurred, &blurred, &blurred, &blurred, &blurred)
	var picks []map[string]any
	for _, id := range ps[:6] {
		picks = append(picks, map[string]any{"assetId": id, "picked": true})
	}
	u.apply(t, first, picks...)
	p = u.preferences(t, "GET", nil)
	if b := p.Strictness["blurry"]; b == nil || *b >= 0.5 || *p.Base["blurry"] != 0.5 || *p.Strictness["motionBlur"] != 0.5 {
		t.Fatalf("after keeping six blurred photos: %+v", p)
	}
	if len(p.Adjustments) != 1 || p.Adjustments[0].Criterion != "blurry" || p.Adjustments[0].Kept != 6 ||
		!strings.Contains(p.Adjustments[0].Message, "you kept 6 photos called blurry") {
		t.Fatalf("adjustments %+v", p.Adjustments)
	}
	learned := *p.Strictness["blurry"]

	// What was learned in one project holds in another: a photo blurry at
	// 0.5 but not at the learned strictness is not rejected.
	second, borderline := u.shoot(t, between(learned, 0.5))
	sg := u.suggest(t, second, nil)
	if len(sg.Rejects) != 0 || *sg.Strictness["blurry"] != learned {
		t.Fatalf("suggestion in another project: %+v", sg)
	}
	sg = u.suggest(t, second, map[string]any{"strictness": map[string]any{"blurry": 0.5}})
	if got := codes(sg.Rejects); got[borderline[0]] != "blurry" {
		t.Fatalf("at 0.5 as asked: %+v", sg)
	}

	// A base set by hand: learning moves it as it moved the default.
	p = u.preferences(t, "PUT", map[string]any{"strictness": map[string]any{"blurry": 0.8, "faceSoft": "off"}})
	if *p.Base["blurry"] != 0.8 || p.Base["faceSoft"] != nil || *p.Base["misfire"] != 0.5 ||
		math.Abs(*p.Strictness["blurry"]-(0.8-(0.5-learned))) > 1e-9 || p.Strictness["faceSoft"] != nil {
		t.Fatalf("after PUT: %+v", p)
	}
	for field, body := range map[string]any{
		"strictness":          map[string]any{},
		"strictness.nope":     map[string]any{"strictness": map[string]any{"nope": 0.5}},
		"strictness.blurry":   map[string]any{"strictness": map[string]any{"blurry": true}},
		"strictness.faceSoft": map[string]any{"strictness": map[string]any{"faceSoft": 2}},
	} {
		r := a.do("PUT", "/v1/cull/preferences", u.key, body)
		expect(t, r, 400, "validation_failed")
		if f := fields(t, r); f[field] == nil {
			t.Fatalf("%v: fields %v, want %s", body, f, field)
		}
	}

	// Reset: the defaults, and what was decided so far no longer teaches.
	p = u.preferences(t, "DELETE", nil)
	if *p.Strictness["blurry"] != 0.5 || *p.Base["blurry"] != 0.5 || p.Base["faceSoft"] == nil || len(p.Adjustments) != 0 || p.LearnSince == nil {
		t.Fatalf("after reset: %+v", p)
	}
	u.apply(t, first, map[string]any{"assetId": ps[6], "picked": true})
	if p = u.preferences(t, "GET", nil); *p.Strictness["blurry"] >= 0.5 || *p.Strictness["blurry"] <= learned || p.Adjustments[0].Kept != 1 {
		t.Fatalf("one blurred photo kept after the reset: %+v, want a smaller move than six made", p)
	}
	// Another person's preferences are their own.
	if p := newCuller(t, a, "bob@example.org").preferences(t, "GET", nil); *p.Strictness["blurry"] != 0.5 {
		t.Fatalf("bob's: %+v", p)
	}
}

// BenchmarkCullSuggest asks cull:suggest over a project of 2,000
// processed photos through the real server and Postgres: signals on every
// photo, faces on a third, 200 bursts of four, 100 duplicate pairs and
// 200 hand decisions (each op is one suggestion, the best of each group
// picked). Beside it: the query alone, the baseline of listing the same
// photos (two pages of 1,000), and applying 2,000 assisted actions (two
// requests of 1,000). Targets: suggest p95 ≤ 500 ms, apply ≤ 2 s.
func BenchmarkCullSuggest(b *testing.B) {
	const n = 2000
	env := testenv.New(b)
	a := startAppWith(b, env, env.Redis, options{model: seed.Model, env: map[string]string{
		"RATE_API_PER_MINUTE": "1000000", "RATE_API_BURST": "1000000",
	}})
	u := newCuller(b, a, "bench@example.org")
	ctx := context.Background()
	p, err := env.Store.CreateProject(ctx, u.owner, "Season", "", nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	s := seed.Fill(b, env, p.ID, n)
	var ids []uuid.UUID
	for _, as := range s.Assets {
		if as.Listed {
			ids = append(ids, as.ID)
		}
	}
	// Signals and faces drawn from each photo's id, so every run is alike.
	for _, q := range []string{
		`UPDATE assets SET quality = quality || jsonb_build_object(
			'focus', get_byte(decode(md5(id::text), 'hex'), 0) / 2.55,
			'motionBlur', get_byte(decode(md5(id::text), 'hex'), 1) / 4.0,
			'exposure', (get_byte(decode(md5(id::text), 'hex'), 2) - 128) / 32.0,
			'detail', get_byte(decode(md5(id::text), 'hex'), 3) / 255.0,
			'warnings', '[]'::jsonb) WHERE project_id = $1`,
		`INSERT INTO face_scans (asset_id, project_id, model, width_px, height_px, face_count, eyes_closed, out_of_focus, min_sharpness)
		 SELECT id, project_id, 'bench', 100, 80, 2, get_byte(decode(md5(id::text), 'hex'), 4) % 3, 0,
		        get_byte(decode(md5(id::text), 'hex'), 5) / 2.55
		 FROM assets WHERE project_id = $1 AND get_byte(decode(md5(id::text), 'hex'), 6) % 3 = 0`,
	} {
		if _, err := env.DB.ExecContext(ctx, q, p.ID); err != nil {
			b.Fatal(err)
		}
	}
	var groups []store.NewCluster
	for i := 0; i+4 <= 800 && i+4 <= len(ids); i += 4 {
		groups = append(groups, burst(ids[i:i+4]...))
	}
	for i := 800; i+2 <= 1000 && i+2 <= len(ids); i += 2 {
		groups = append(groups, group("pair", ids[i:i+2]...))
	}
	u.groups(b, p.ID, groups...)
	var hand []map[string]any
	for i := 1000; i < 1200 && i < len(ids); i++ {
		hand = append(hand, map[string]any{"assetId": ids[i], "picked": i%2 == 0, "rejected": i%2 == 1})
	}
	u.apply(b, p.ID, hand...)
	for _, table := range []string{"assets", "face_scans", "clusters", "cluster_assets", "ratings"} {
		if _, err := env.DB.ExecContext(ctx, "VACUUM ANALYZE "+table); err != nil {
			b.Fatal(err)
		}
	}

	path := "/v1/projects/" + p.ID.String()
	timed := func(method, path string, body any) time.Duration {
		t := time.Now()
		if r := a.do(method, path, u.key, body); r.status != 200 {
			b.Fatalf("%s %s: %d %s", method, path, r.status, r.body[:min(300, len(r.body))])
		}
		return time.Since(t)
	}
	body := map[string]any{"keepPerGroup": 1}
	timed("POST", path+"/cull:suggest", body) // warm: plans, connections
	var suggests []time.Duration
	b.ResetTimer()
	for range b.N {
		suggests = append(suggests, timed("POST", path+"/cull:suggest", body))
	}
	b.StopTimer()
	b.ReportMetric(ms(percentile(suggests, 50)), "suggest_p50_ms")
	b.ReportMetric(ms(percentile(suggests, 95)), "suggest_p95_ms")

	var queries, lists []time.Duration
	for range 20 {
		t := time.Now()
		if photos, err := env.Store.CullPhotos(ctx, p.ID, u.owner); err != nil || len(photos) != len(ids) {
			b.Fatalf("%d photos, %v", len(photos), err)
		}
		queries = append(queries, time.Since(t))
		t = time.Now()
		for cursor := ""; ; {
			r := a.do("GET", path+"/assets?limit=1000&cursor="+url.QueryEscape(cursor), u.key, nil)
			page := decode[pageOf[struct{ ID string }]](b, r)
			if r.status != 200 || page.PageInfo.NextCursor == nil {
				break
			}
			cursor = *page.PageInfo.NextCursor
		}
		lists = append(lists, time.Since(t))
	}
	b.ReportMetric(ms(percentile(queries, 50)), "query_p50_ms")
	b.ReportMetric(ms(percentile(lists, 50)), "baseline_list_p50_ms")

	var applied time.Duration
	for i := 0; i < len(ids); i += 1000 {
		var actions []map[string]any
		for _, id := range ids[i:min(i+1000, len(ids))] {
			actions = append(actions, map[string]any{"assetId": id, "rejected": true, "assisted": true})
		}
		applied += timed("POST", path+"/cull:applyAction", map[string]any{"actions": actions})
	}
	b.ReportMetric(ms(applied), "apply_all_ms")
	b.ReportMetric(float64(len(ids)), "photos")
}

// assets:judge records one project:signals job for the project, on its
// owner's word alone.
func TestJudgeProjectQueuesOneSignalsRun(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	u := newCuller(t, a, "ana@example.org")
	project, _ := u.shoot(t, &sharp)
	path := "/v1/projects/" + project.String() + "/assets:judge"
	r := a.do("POST", path, u.key, nil)
	expect(t, r, 202, "")
	out := decode[struct{ QueuedJobs []uuid.UUID }](t, r)
	if len(out.QueuedJobs) != 1 {
		t.Fatalf("queued %v, want one job", out.QueuedJobs)
	}
	if n := a.env.Count(t, `SELECT count(*) FROM jobs WHERE id = $1 AND project_id = $2 AND type = 'project:signals'`, out.QueuedJobs[0], project); n != 1 {
		t.Fatalf("%d project:signals jobs recorded as %s", n, out.QueuedJobs[0])
	}
	bob := newCuller(t, a, "bob@example.org")
	expect(t, a.do("POST", path, bob.key, nil), 404, "not_found")
}
