package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/events"
	"lightbox/testsupport/seed"
	"lightbox/testsupport/testenv"
)

// listed is one asset as a test of the list's filters and orders knows it.
type listed struct {
	id                string
	name, camera      string
	captured, created time.Time
	hasCapture        bool
	status            string
	picked, rejected  bool
	rating            int
}

// TestAssetListFiltersAndOrders walks a project's list, a few assets a
// page, with each filter and order and some of them together, and finds
// exactly the assets each should hold, in the order it promises; a cursor
// of one order is refused by another.
func TestAssetListFiltersAndOrders(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	s := seed.Fill(t, a.env, uuid.MustParse(project), 240)
	ctx := context.Background()

	// Three photos without a capture time, two with the same name.
	all := map[string]*listed{}
	var order []string
	for _, x := range s.Assets {
		all[x.ID.String()] = &listed{id: x.ID.String(), name: x.Filename, camera: x.Camera, captured: x.Captured, created: x.CreatedAt, hasCapture: true}
		order = append(order, x.ID.String())
	}
	for _, id := range order[10:13] {
		a.env.SetAssets(t, testenv.AssetRow{NoCaptureTime: true}, "id = $1", id)
		all[id].hasCapture = false
	}
	for _, id := range order[20:22] {
		a.env.SetAssets(t, testenv.AssetRow{Filename: "same.jpg"}, "id = $1", id)
		all[id].name = "same.jpg"
	}
	var statuses []struct{ ID, Status string }
	if err := a.env.DB.SelectContext(ctx, &statuses, `SELECT id, status FROM assets WHERE project_id = $1`, project); err != nil {
		t.Fatal(err)
	}
	for _, st := range statuses {
		all[st.ID].status = st.Status
	}

	// Ratings: every third picked, every fifth rejected (unless picked),
	// stars by place.
	var actions []map[string]any
	for i, id := range order {
		x := all[id]
		x.picked, x.rejected, x.rating = i%3 == 0, i%3 != 0 && i%5 == 0, i%6
		act := map[string]any{"assetId": id, "picked": x.picked, "rejected": x.rejected, "rating": nil}
		if x.rating > 0 {
			act["rating"] = x.rating
		}
		actions = append(actions, act)
	}
	expect(t, a.do("POST", "/v1/projects/"+project+"/cull:applyAction", key, map[string]any{"actions": actions}), 200, "")

	when := func(x *listed) time.Time {
		if x.hasCapture {
			return x.captured
		}
		return x.created
	}
	byOrder := map[string]func(x, y *listed) int{
		"uploaded":   func(x, y *listed) int { return x.created.Compare(y.created) },
		"capturedAt": func(x, y *listed) int { return when(x).Compare(when(y)) },
		"filename":   func(x, y *listed) int { return strings.Compare(x.name, y.name) },
	}
	mid := s.Assets[len(s.Assets)/2].Captured
	late := s.Assets[len(s.Assets)*3/4].Captured
	cases := []struct {
		query string
		keep  func(x *listed) bool
	}{
		{"", func(*listed) bool { return true }},
		{"picked=true", func(x *listed) bool { return x.picked }},
		{"picked=false&rejected=false", func(x *listed) bool { return !x.picked && !x.rejected }},
		{"ratingMin=3&rejected=false", func(x *listed) bool { return x.rating >= 3 && !x.rejected }},
		{"camera=" + url.QueryEscape(strings.ToUpper(s.Assets[0].Camera[:4])), func(x *listed) bool {
			return strings.Contains(strings.ToLower(x.camera), strings.ToLower(s.Assets[0].Camera[:4]))
		}},
		{"from=" + url.QueryEscape(mid.Format(time.RFC3339Nano)) + "&to=" + url.QueryEscape(late.Format(time.RFC3339Nano)), func(x *listed) bool {
			return x.hasCapture && !x.captured.Before(mid) && !x.captured.After(late)
		}},
		{"readiness=failed", func(x *listed) bool { return x.status == "failed" }},
		{"readiness=cull,search&ratingMin=1", func(x *listed) bool { return (x.status == "cull" || x.status == "search") && x.rating >= 1 }},
	}
	for _, c := range cases {
		for _, by := range []string{"uploaded", "capturedAt", "filename"} {
			for _, dir := range []string{"asc", "desc"} {
				var want []string
				for _, id := range order {
					if c.keep(all[id]) {
						want = append(want, id)
					}
				}
				slices.SortStableFunc(want, func(i, j string) int {
					x, y := all[i], all[j]
					r := byOrder[by](x, y)
					if r == 0 {
						r = strings.Compare(i, j)
					}
					if dir == "desc" {
						r = -r
					}
					return r
				})
				q := fmt.Sprintf("%s&sort=%s&order=%s", c.query, by, dir)
				if len(want) == 0 {
					t.Fatalf("%s: the seeded project holds no such asset, so the case tests nothing", q)
				}
				if got := walkAssets(t, a, key, project, q, 17); !slices.Equal(got, want) {
					t.Errorf("%s: %d assets %v\nwant %d %v", q, len(got), got, len(want), want)
				}
			}
		}
	}

	// A cursor of one order is not one of another.
	r := a.do("GET", "/v1/projects/"+project+"/assets?limit=5&sort=filename", key, nil)
	page := decode[struct{ PageInfo struct{ NextCursor string } }](t, r)
	expect(t, a.do("GET", "/v1/projects/"+project+"/assets?limit=5&cursor="+page.PageInfo.NextCursor, key, nil), 400, "invalid_cursor")
	expect(t, a.do("GET", "/v1/projects/"+project+"/assets?limit=5&sort=filename&order=desc&cursor="+page.PageInfo.NextCursor, key, nil), 400, "invalid_cursor")
	for _, q := range []string{"sort=size", "order=up", "readiness=ready", "from=yesterday", "camera=" + strings.Repeat("c", 201),
		"from=2026-06-02T00:00:00Z&to=2026-06-01T00:00:00Z"} {
		expect(t, a.do("GET", "/v1/projects/"+project+"/assets?"+q, key, nil), 400, "validation_failed")
	}
}

// walkAssets lists every page of a query, limit at a time, and returns
// the ids in the order met.
func walkAssets(t *testing.T, a *app, key, project, query string, limit int) []string {
	t.Helper()
	var ids []string
	cursor := ""
	for range 1000 {
		r := a.do("GET", fmt.Sprintf("/v1/projects/%s/assets?%s&limit=%d&cursor=%s", project, query, limit, url.QueryEscape(cursor)), key, nil)
		expect(t, r, 200, "")
		var page struct {
			Items    []struct{ ID string }
			PageInfo struct{ NextCursor *string }
		}
		json.Unmarshal(r.body, &page)
		for _, x := range page.Items {
			ids = append(ids, x.ID)
		}
		if page.PageInfo.NextCursor == nil {
			return ids
		}
		cursor = *page.PageInfo.NextCursor
	}
	t.Fatalf("%s: no end to the pages", query)
	return nil
}

// TestEditedMark: a photo with an edit says so in the list, and open
// views hear it at once.
func TestEditedMark(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	ids := processed(t, a, key, project, []string{"Canon", "Nikon"}, [][]float32{{1, 0}, {0, 1}})
	edited := func() map[string]bool {
		out := map[string]bool{}
		for _, x := range a.assetList(key, project, "") {
			out[x.ID] = x.Flags["edited"] == true
		}
		return out
	}
	if got := edited(); got[ids[0].String()] || got[ids[1].String()] {
		t.Fatalf("edited before any edit: %v", got)
	}
	expect(t, a.do("POST", "/v1/assets/"+ids[1].String()+"/edits", key, map[string]any{"params": map[string]any{"exposure": 0.5}}), 201, "")
	if got := edited(); got[ids[0].String()] || !got[ids[1].String()] {
		t.Fatalf("edited after an edit of the second: %v", got)
	}
	evs, _, err := events.NewPublisher(a.env.Redis, events.PublisherOptions{}).Since(context.Background(), uuid.MustParse(project), 0)
	if err != nil {
		t.Fatal(err)
	}
	heard := false
	for _, ev := range evs {
		var data struct {
			AssetID string
			Edited  bool
		}
		json.Unmarshal(ev.Data, &data)
		heard = heard || ev.Name == events.AssetUpdated && data.AssetID == ids[1].String() && data.Edited
	}
	if !heard {
		t.Error("no asset.updated event said the photo was edited")
	}
}
