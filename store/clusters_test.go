package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/store"
	"lightbox/testsupport/testenv"
)

// moment is one group of member, titled title.
func moment(title string, member uuid.UUID) []store.NewCluster {
	now := time.Now()
	return []store.NewCluster{{Kind: "moment", Title: title, Start: &now, End: &now, Winner: member,
		Members: []store.ClusterMember{{AssetID: member, Rank: 1, Role: "winner", Signals: json.RawMessage(`{}`)}}}}
}

func clusterTitles(t *testing.T, st *store.Store, project uuid.UUID) []string {
	t.Helper()
	page, err := st.Clusters(context.Background(), project, "", nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, c := range page.Items {
		titles = append(titles, c.Title)
	}
	return titles
}

// Run 2 starts while run 1 still computes, and finishes first: run 1's
// older groups must not replace run 2's, nor move its assets.
func TestStaleClusterRunChangesNothing(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	ids := env.AssetsIn(t, owner, project, store.AssetUploaded, store.AssetSearch)
	first, second := ids[0], ids[1]
	st := env.Store
	one := env.StartClusterRun(t, project)
	two := env.StartClusterRun(t, project)

	if _, stored, err := st.ReplaceClusters(ctx, project, two, moment("run 2", first), nil); !stored || err != nil {
		t.Fatalf("run 2: stored %v, %v", stored, err)
	}
	moved, stored, err := st.ReplaceClusters(ctx, project, one, moment("run 1", second), []uuid.UUID{second})
	if err != nil {
		t.Fatal(err)
	}
	if stored || moved != 0 {
		t.Errorf("stale run 1: stored %v, moved %d; want nothing", stored, moved)
	}
	if titles := clusterTitles(t, st, project); len(titles) != 1 || titles[0] != "run 2" {
		t.Errorf("clusters %q, want run 2's only", titles)
	}
	if s := env.AssetStatus(t, second); s != "search" {
		t.Errorf("stale run 1 moved an asset to %s", s)
	}
	// Nor does a repeat of run 2.
	if _, stored, _ := st.ReplaceClusters(ctx, project, two, moment("run 2 again", first), nil); stored {
		t.Error("run 2 stored twice")
	}
}

// Two runs of a project store their groups at the same time: the second
// waits for the first, then replaces its groups if newer and changes
// nothing if older. Either way one run's groups remain.
func TestConcurrentClusterRunsLeaveOneRunsGroups(t *testing.T) {
	for _, tc := range []struct {
		name             string
		firstIsNewer     bool
		wantRemaining    string
		wantSecondStored bool
	}{
		{"older first", false, "second", true},
		{"newer first", true, "first", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := testenv.New(t)
			ctx := context.Background()
			owner, project := env.Project(t)
			res := env.Finalize(t, owner, project, testenv.Files(1)...)
			member := res.Assets[0].AssetID
			st := env.Store
			if _, _, err := st.ReplaceClusters(ctx, project, env.StartClusterRun(t, project), moment("old", member), nil); err != nil {
				t.Fatal(err)
			}
			older, newer := env.StartClusterRun(t, project), env.StartClusterRun(t, project)
			firstRun, secondRun := older, newer
			if tc.firstIsNewer {
				firstRun, secondRun = newer, older
			}

			type result struct {
				stored bool
				err    error
			}
			second := make(chan result, 1)
			err := st.WithTx(ctx, func(tx *store.Store) error {
				if _, stored, err := tx.ReplaceClusters(ctx, project, firstRun, moment("first", member), nil); !stored || err != nil {
					return errors.Join(errors.New("the first run stored nothing"), err)
				}
				// This transaction is the only writer to the test's clusters.
				holder, err := writer(env, "clusters")
				if err != nil {
					return err
				}
				go func() {
					_, stored, err := st.ReplaceClusters(ctx, project, secondRun, moment("second", member), nil)
					second <- result{stored, err}
				}()
				return waitForWaiter(env, holder)
			})
			if err != nil {
				t.Fatal(err)
			}
			r := <-second
			if r.err != nil || r.stored != tc.wantSecondStored {
				t.Errorf("second run: stored %v, %v; want stored %v", r.stored, r.err, tc.wantSecondStored)
			}
			if titles := clusterTitles(t, st, project); len(titles) != 1 || titles[0] != tc.wantRemaining {
				t.Errorf("clusters %q, want the %s run's only", titles, tc.wantRemaining)
			}
		})
	}
}

// A page of groups, a cluster run storing them all again, then the next
// page: it goes on from where the first ended, in time order, where a
// cursor on when the groups were stored started over.
func TestClusterPagesGoOnAcrossARun(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	res := env.Finalize(t, owner, project, testenv.Files(5)...)
	base := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	groups := func() []store.NewCluster {
		var cs []store.NewCluster
		// Stored in the reverse of their time order.
		for i := 4; i >= 0; i-- {
			at := base.Add(time.Duration(i) * time.Hour)
			member := res.Assets[i].AssetID
			cs = append(cs, store.NewCluster{Kind: "moment", Title: fmt.Sprintf("moment %d", i), Start: &at, End: &at, Winner: member,
				Members: []store.ClusterMember{{AssetID: member, Rank: 1, Role: "winner", Signals: json.RawMessage(`{}`)}}})
		}
		return cs
	}
	store1 := func() {
		t.Helper()
		if _, stored, err := env.Store.ReplaceClusters(ctx, project, env.StartClusterRun(t, project), groups(), nil); !stored || err != nil {
			t.Fatalf("stored %v, %v", stored, err)
		}
	}
	titles := func(p store.Page[store.Cluster]) string {
		var out []string
		for _, c := range p.Items {
			out = append(out, c.Title)
		}
		return strings.Join(out, ", ")
	}
	store1()
	first, err := env.Store.Clusters(ctx, project, "", nil, 2)
	if err != nil || titles(first) != "moment 0, moment 1" || first.Next == nil {
		t.Fatalf("first page: %s (next %v), %v", titles(first), first.Next, err)
	}
	store1()
	next, err := env.Store.Clusters(ctx, project, "", first.Next, 2)
	if err != nil || titles(next) != "moment 2, moment 3" {
		t.Fatalf("after a run, the next page: %s, %v; want moment 2, moment 3", titles(next), err)
	}
}

// A run that started and never finished is overdue once it started long
// enough ago, and no longer once it stored its groups.
func TestAStartedRunThatNeverEndsIsOverdue(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	_, project := env.Project(t)
	run := env.StartClusterRun(t, project)
	overdue := func() bool {
		t.Helper()
		now := time.Now()
		runs, err := env.Store.OverdueClusterRuns(ctx, now.Add(-2*time.Minute), now.Add(-15*time.Minute), 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(runs) == 1 && runs[0].ProjectID == project && runs[0].Run == run
	}
	if overdue() {
		t.Fatal("a run started just now is overdue")
	}
	env.Age(t, "cluster_runs", "started_at", time.Hour, "project_id = $1", project)
	if !overdue() {
		t.Fatal("a run started an hour ago and never finished is not overdue")
	}
	if _, stored, err := env.Store.ReplaceClusters(ctx, project, run, nil, nil); !stored || err != nil {
		t.Fatalf("stored %v, %v", stored, err)
	}
	if overdue() {
		t.Fatal("a finished run is overdue")
	}
}
