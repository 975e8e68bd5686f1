package server_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"

	"lightbox/store"
)

type reviewedClusterJSON struct {
	ID, Title, WinnerAssetID string
	Reviewed                 bool
	WhyWinner                []string
	ManualOverrides          json.RawMessage
	Assets                   []struct{ AssetID, Role string }
}

func (c reviewedClusterJSON) role(asset uuid.UUID) string {
	for _, m := range c.Assets {
		if m.AssetID == asset.String() {
			return m.Role
		}
	}
	return ""
}

func TestReviewingAClusterSurvivesLaterRuns(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	ids := processed(t, a, key, project, []string{"Canon", "Canon", "Canon"}, [][]float32{{1, 0}, {0, 1}, {1, 1}})
	pid := uuid.MustParse(project)
	run := func(n int64, cs ...store.NewCluster) reviewedClusterJSON {
		t.Helper()
		if _, _, err := a.env.Store.ReplaceClusters(context.Background(), pid, n, cs, nil); err != nil {
			t.Fatal(err)
		}
		r := a.do("GET", "/v1/projects/"+project+"/clusters?kind=duplicate_group", key, nil)
		expect(t, r, 200, "")
		page := decode[struct{ Items []reviewedClusterJSON }](t, r)
		if len(page.Items) != 1 {
			t.Fatalf("clusters after run %d: %s", n, r.body)
		}
		return page.Items[0]
	}
	cl := run(1, group("Duplicates", ids[0], ids[1]))
	path := "/v1/clusters/" + cl.ID

	r := a.do("PATCH", path, key, map[string]any{"title": " Ceremony ", "reviewed": true, "manualOverrides": map[string]any{"hidden": []string{ids[1].String()}}})
	expect(t, r, 200, "")
	got := decode[reviewedClusterJSON](t, r)
	if got.Title != "Ceremony" || !got.Reviewed || string(got.ManualOverrides) != `{"hidden":["`+ids[1].String()+`"]}` {
		t.Fatalf("after PATCH: %s", r.body)
	}
	r = a.do("POST", path+"/winner", key, map[string]any{"winnerAssetId": ids[1]})
	expect(t, r, 200, "")
	json.Unmarshal(r.body, &got)
	if got.WinnerAssetID != ids[1].String() || got.role(ids[1]) != "winner" || got.role(ids[0]) != "alt" || got.WhyWinner[0] != "chosen" {
		t.Fatalf("after choosing a winner: %s", r.body)
	}

	// Each bad request answers clearly and changes nothing.
	bob := a.user("bob@example.org", false)
	for _, c := range []struct {
		method, path, key string
		body              any
		status            int
		code              string
	}{
		{"POST", path + "/winner", key, map[string]any{"winnerAssetId": ids[2]}, 400, "validation_failed"},
		{"POST", path + "/winner", key, map[string]any{}, 400, "validation_failed"},
		{"PATCH", path, key, map[string]any{}, 400, "validation_failed"},
		{"PATCH", path, key, map[string]any{"title": ""}, 400, "validation_failed"},
		{"PATCH", path, key, map[string]any{"reviewed": nil, "title": nil}, 200, ""}, // null leaves each as it is
		{"PATCH", path, key, map[string]any{"manualOverrides": []int{1}}, 400, "validation_failed"},
		{"PATCH", path, key, map[string]any{"winner": ids[0]}, 400, "invalid_json"},
		{"PATCH", path, bob, map[string]any{"reviewed": false}, 404, "not_found"},
		{"POST", path + "/winner", bob, map[string]any{"winnerAssetId": ids[0]}, 404, "not_found"},
		{"PATCH", "/v1/clusters/" + uuid.NewString(), key, map[string]any{"reviewed": false}, 404, "not_found"},
	} {
		expect(t, a.do(c.method, c.path, c.key, c.body), c.status, c.code)
	}

	// The next run finds the group grown by a new upload: the person's
	// title, mark, winner and overrides stay, and so does the group's id.
	next := run(2, group("Duplicates", ids[0], ids[1], ids[2]))
	if next.ID != cl.ID || next.Title != "Ceremony" || !next.Reviewed || next.WinnerAssetID != ids[1].String() ||
		next.role(ids[1]) != "winner" || next.role(ids[0]) != "alt" || string(next.ManualOverrides) != string(got.ManualOverrides) {
		t.Fatalf("after a later run: %+v", next)
	}
	// A group that kept no more than half of the reviewed members is a
	// new group.
	other := run(3, group("Duplicates", ids[2]))
	if other.ID == cl.ID || other.Reviewed || other.Title != "Duplicates" || other.WinnerAssetID != ids[2].String() {
		t.Fatalf("a different group took the review: %+v", other)
	}
}
