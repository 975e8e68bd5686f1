package worker_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"lightbox/imaging"
	"lightbox/testsupport/testenv"
)

// TestResizedAndReencodedCopiesFormADuplicateGroup runs real photos and
// copies made from them (half size, and re-encoded at low quality) through
// a running worker: each photo groups with its copies and with nothing else.
func TestResizedAndReencodedCopiesFormADuplicateGroup(t *testing.T) {
	t.Parallel()
	h := newHarness(t, map[string]string{"CLUSTER_DELAY": "1s"})
	project := h.project()
	engine, err := imaging.New("", imaging.Config{})
	if err != nil {
		t.Fatal(err)
	}
	groups := map[string][]uuid.UUID{}
	for _, name := range []string{"photos/wood.jpg", "photos/dune.jpg", "photos/kite-2560x1600.jpg"} {
		orig := readCorpus(t, name)
		half, err := engine.Render(context.Background(), orig, imaging.RenderOptions{Width: 1000, Height: 1000, Quality: 90})
		if err != nil {
			t.Fatal(err)
		}
		rough, err := engine.Render(context.Background(), orig, imaging.RenderOptions{Quality: 40})
		if err != nil {
			t.Fatal(err)
		}
		groups[name] = []uuid.UUID{
			h.finalize(project, name, orig),
			h.finalize(project, "half-"+name, half),
			h.finalize(project, "rough-"+name, rough),
		}
	}
	h.run()
	testenv.Eventually(h.t, "all assets to be clustered", patience, func() bool {
		return h.count(`SELECT count(*) FROM assets WHERE status = 'ai'`) == 9
	})
	if n := h.count(`SELECT count(*) FROM clusters WHERE kind = 'duplicate_group'`); n != 3 {
		t.Fatalf("%d duplicate groups, want one per photo", n)
	}
	for name, ids := range groups {
		var members int
		h.env.DB.Get(&members, `SELECT count(DISTINCT ca.asset_id) FROM cluster_assets ca
			JOIN clusters c ON c.id = ca.cluster_id AND c.kind = 'duplicate_group'
			WHERE ca.cluster_id = (SELECT cluster_id FROM cluster_assets x JOIN clusters y ON y.id = x.cluster_id
			                        WHERE x.asset_id = $1 AND y.kind = 'duplicate_group')`, ids[0])
		if members != 3 {
			t.Errorf("%s: its duplicate group has %d members, want the photo and its 2 copies", name, members)
		}
		var winner uuid.UUID
		h.env.DB.Get(&winner, `SELECT c.winner_asset_id FROM clusters c JOIN cluster_assets ca ON ca.cluster_id = c.id
			WHERE c.kind = 'duplicate_group' AND ca.asset_id = $1`, ids[0])
		if winner == ids[1] {
			t.Errorf("%s: the half-size copy won over the full-size original", name)
		}
	}
}
