package server_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
	"time"

	"lightbox/store"
	"lightbox/testsupport/seed"
	"lightbox/testsupport/testenv"
)

// BenchmarkScaleProject seeds one project with seed.Size assets (100,000
// unless LIGHTBOX_SCALE_ASSETS says otherwise) and measures, through the
// real server, the p50 and p99 of: the first page of the asset list and a
// page deep in it (by cursor), search, similar, and stats (computed, with
// the 5 s cache emptied first, and cached), and each one's first call
// (for similar, loading the project's vectors). Run it with -benchtime=1x.
func BenchmarkScaleProject(b *testing.B) {
	const calls = 200
	n := seed.Size(b)
	env := testenv.New(b)
	a := startAppWith(b, env, env.Redis, options{model: seed.Model, env: map[string]string{
		"RATE_API_PER_MINUTE": "1000000", "RATE_API_BURST": "1000000",
	}})
	ctx := context.Background()
	u, err := env.Store.CreateUser(ctx, "scale@example.org", false)
	if err != nil {
		b.Fatal(err)
	}
	key, _, err := env.Store.CreateAPIKey(ctx, u.ID, "bench")
	if err != nil {
		b.Fatal(err)
	}
	p, err := env.Store.CreateProject(ctx, u.ID, "Season", "", nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	s := seed.Fill(b, env, p.ID, n)
	seedSecs := time.Since(start).Seconds()

	base := "/v1/projects/" + p.ID.String()
	deep := s.Assets[n-100]
	deepCursor := store.Cursor{Time: deep.CreatedAt, ID: deep.ID}.Encode()
	queries := searchQueries(s)
	rng := rand.New(rand.NewPCG(1, 2))
	var embedded []string
	for _, as := range s.Assets {
		if as.Embedded {
			embedded = append(embedded, as.ID.String())
		}
	}

	get := func(path string) {
		if r := a.do("GET", path, key, nil); r.status != 200 {
			b.Fatalf("GET %s: %d %s", path, r.status, r.body[:min(300, len(r.body))])
		}
	}
	measure := func(name string, path func(i int) string, before func()) {
		t := time.Now()
		get(path(0)) // warm: plans, connections, caches built on first use
		b.ReportMetric(ms(time.Since(t)), name+"_first_ms")
		// Up to calls requests, or as many as 20 s allow (at least 20), so
		// a slow baseline still finishes.
		var ds []time.Duration
		began := time.Now()
		for i := 0; i < calls && (i < 20 || time.Since(began) < 20*time.Second); i++ {
			if before != nil {
				before()
			}
			t := time.Now()
			get(path(i))
			ds = append(ds, time.Since(t))
		}
		b.ReportMetric(ms(percentile(ds, 50)), name+"_p50_ms")
		b.ReportMetric(ms(percentile(ds, 99)), name+"_p99_ms")
	}
	b.ResetTimer()
	for range b.N {
		measure("list_first", func(int) string { return base + "/assets" }, nil)
		measure("list_deep", func(int) string { return base + "/assets?cursor=" + url.QueryEscape(deepCursor) }, nil)
		measure("search", func(i int) string {
			return base + "/search?q=" + url.QueryEscape(queries[i%len(queries)])
		}, nil)
		// The two ends of the mix: a file name (one match) and a year
		// less one maker (most of the project, every match ranked).
		measure("search_file", func(int) string { return base + "/search?q=" + url.QueryEscape(queries[1]) }, nil)
		measure("search_most", func(int) string {
			return base + "/search?q=" + url.QueryEscape(queries[len(queries)-1])
		}, nil)
		measure("similar", func(int) string {
			return "/v1/assets/" + embedded[rng.IntN(len(embedded))] + "/similar"
		}, nil)
		measure("stats", func(int) string { return base + "/stats" },
			func() { env.Redis.Del(ctx, "stats:"+p.ID.String()) })
		measure("stats_cached", func(int) string { return base + "/stats" }, nil)
	}
	b.ReportMetric(seedSecs, "seed_s")
}

// searchQueries are what people type: a camera maker (matching many), a
// file name (one or two), a month, a day, a model, and a year less one
// maker (most of the project), taken from an asset with a known camera.
func searchQueries(s *seed.Seeded) []string {
	mid := s.Assets[len(s.Assets)/2]
	for _, a := range s.Assets[len(s.Assets)/2:] {
		if maker, model, _ := strings.Cut(a.Camera, " "); maker != "" && model != "" {
			mid = a
			break
		}
	}
	maker, model, _ := strings.Cut(mid.Camera, " ")
	return []string{
		maker,
		strings.TrimSuffix(mid.Filename, ".JPG"),
		mid.Captured.Format("January"),
		mid.Captured.Format("2006-01-02"),
		model,
		fmt.Sprintf("%s -%s", mid.Captured.Format("2006"), maker),
	}
}
