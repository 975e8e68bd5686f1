package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/store"
	"lightbox/testsupport/testenv"
)

func TestSearchAndSimilar(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	ids := processed(t, a, key, project, []string{"Canon", "Nikon", "Canon"},
		[][]float32{{1, 0, 0}, {0.6, 0.8, 0}, {0, 0, 1}})

	r := a.do("GET", "/v1/projects/"+project+"/search?q=canon", key, nil)
	expect(t, r, 200, "")
	var res struct {
		Results []struct {
			AssetID    string
			Score      float64
			Highlights []string
		}
		TookMs *int64
	}
	json.Unmarshal(r.body, &res)
	if len(res.Results) != 2 || res.TookMs == nil {
		t.Fatalf("search canon: %s", r.body)
	}
	for _, hit := range res.Results {
		if hit.AssetID == ids[1].String() || strings.Join(hit.Highlights, ",") != "camera" {
			t.Fatalf("search canon hit %+v", hit)
		}
	}
	r = a.do("GET", "/v1/projects/"+project+"/search?q=dune", key, nil)
	json.Unmarshal(r.body, &res)
	if len(res.Results) != 1 || res.Results[0].AssetID != ids[1].String() || res.Results[0].Highlights[0] != "filename" {
		t.Fatalf("search by file name: %s", r.body)
	}
	r = a.do("GET", "/v1/projects/"+project+"/search?q=2026-06-21", key, nil)
	json.Unmarshal(r.body, &res)
	if len(res.Results) != 3 {
		t.Fatalf("search by date: %s", r.body)
	}
	expect(t, a.do("GET", "/v1/projects/"+project+"/search?q=", key, nil), 400, "validation_failed")

	r = a.do("GET", "/v1/assets/"+ids[0].String()+"/similar?limit=5", key, nil)
	expect(t, r, 200, "")
	json.Unmarshal(r.body, &res)
	if len(res.Results) != 2 || res.Results[0].AssetID != ids[1].String() || res.Results[0].Score < 0.59 || res.Results[1].Score > 0.01 {
		t.Fatalf("similar: %s", r.body)
	}
	bob := a.user("bob@example.org", false)
	expect(t, a.do("GET", "/v1/assets/"+ids[0].String()+"/similar", bob, nil), 404, "not_found")
	expect(t, a.do("GET", "/v1/projects/"+project+"/search?q=canon", bob, nil), 404, "not_found")
}

func TestClustersAndStats(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	ids := processed(t, a, key, project, []string{"Canon", "Canon"}, [][]float32{{1, 0}, {0, 1}})
	pid := uuid.MustParse(project)
	signals := json.RawMessage(`{"sharpness":1}`)
	moved, _, err := a.env.Store.ReplaceClusters(context.Background(), pid, 1, []store.NewCluster{{
		Kind: "burst", Title: "Burst of 2", Score: 0.9, Winner: ids[1], WhyWinner: []string{"sharpest"},
		Members: []store.ClusterMember{{AssetID: ids[1], Rank: 1, Role: "winner", Signals: signals}, {AssetID: ids[0], Rank: 2, Role: "alt", Signals: signals}},
	}}, ids)
	if err != nil || moved != 2 {
		t.Fatalf("replace clusters: moved %d, %v", moved, err)
	}

	r := a.do("GET", "/v1/projects/"+project+"/clusters?kind=burst", key, nil)
	expect(t, r, 200, "")
	var page struct {
		Items []struct {
			ID, Kind, WinnerAssetID string
			WhyWinner               []string
			Assets                  []struct {
				AssetID, Role string
				Rank          int
			}
		}
	}
	json.Unmarshal(r.body, &page)
	if len(page.Items) != 1 || page.Items[0].WinnerAssetID != ids[1].String() || page.Items[0].WhyWinner[0] != "sharpest" ||
		len(page.Items[0].Assets) != 2 || page.Items[0].Assets[0].Role != "winner" {
		t.Fatalf("clusters: %s", r.body)
	}
	expect(t, a.do("GET", "/v1/clusters/"+page.Items[0].ID, key, nil), 200, "")
	expect(t, a.do("GET", "/v1/projects/"+project+"/clusters?kind=moment", key, nil), 200, "")
	expect(t, a.do("GET", "/v1/projects/"+project+"/clusters?kind=party", key, nil), 400, "validation_failed")
	bob := a.user("bob@example.org", false)
	expect(t, a.do("GET", "/v1/clusters/"+page.Items[0].ID, bob, nil), 404, "not_found")

	r = a.do("GET", "/v1/projects/"+project+"/stats", key, nil)
	expect(t, r, 200, "")
	if st := r.json(t); st["total"] != 2.0 || st["ready"] != 2.0 {
		t.Fatalf("stats %s", r.body)
	}
}

func TestStatsStayRightUnderConcurrentChanges(t *testing.T) {
	t.Parallel()
	// The loop asks as fast as the server answers; the API budget is not
	// what this test is about.
	env := testenv.New(t)
	a := startAppWith(t, env, env.Redis, options{env: map[string]string{"RATE_API_BURST": "1000000"}})
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	done := make(chan bool)
	go func() {
		defer close(done)
		for range 3 {
			a.uploadAll(key, project, corpus(t, "photos/wood.jpg", "photos/dune.jpg"))
		}
	}()
	for {
		select {
		case <-done:
			// The answer may be up to 5 s old: it is cached that long.
			// Once the cached one has expired, the next is exact.
			cached, ctx := "stats:"+project, context.Background()
			if ttl := a.env.Redis.PTTL(ctx, cached).Val(); ttl > 5*time.Second || ttl == -1 {
				t.Fatalf("the stats are cached for %v, want at most 5 s", ttl)
			}
			testenv.Eventually(t, "the cached stats to expire", 2*time.Minute, func() bool { return a.env.Redis.Exists(ctx, cached).Val() == 0 })
			r := a.do("GET", "/v1/projects/"+project+"/stats", key, nil)
			if st := r.json(t); st["total"] != 2.0 || st["processing"] != 2.0 {
				t.Fatalf("stats after the uploads: %s (the 4 repeats are duplicates, not counted)", r.body)
			}
			return
		default:
			r := a.do("GET", "/v1/projects/"+project+"/stats", key, nil)
			expect(t, r, 200, "")
			st := r.json(t)
			sum := st["uploading"].(float64) + st["processing"].(float64) + st["embedding"].(float64) + st["ready"].(float64) + st["failed"].(float64)
			if sum != st["total"].(float64) || st["total"].(float64) > 4 {
				t.Fatalf("inconsistent stats mid-upload: %s", r.body)
			}
		}
	}
}
