package worker_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/hibiken/asynq"

	"lightbox/app"
	"lightbox/store"
	"lightbox/tasks"
)

// An edit version's render that runs again after a newer version was
// rendered (its first try failed; Asynq retried it later) leaves the
// newer one's files: the asset's edit_preview is its newest version's.
func TestAnOlderEditRenderedLateLeavesTheNewerOne(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ctx := context.Background()
	project := h.project()
	asset, _ := h.finalizeWithoutEnqueue(project, readCorpus(t, "photos/wood.jpg"))
	edit := func(params string) store.Job {
		t.Helper()
		var recorded []store.Job
		h.env.Tx(t, func(tx *store.Store) (err error) {
			_, recorded, err = app.RecordEdits(ctx, tx, h.owner, project, []store.EditTarget{{AssetID: asset, Params: json.RawMessage(params)}})
			return err
		})
		return recorded[0]
	}
	render := func(j store.Job) {
		t.Helper()
		if err := h.w.Handler().ProcessTask(ctx, asynq.NewTask(j.Type, j.Payload)); err != nil {
			t.Fatal(err)
		}
	}
	preview := func() (w, ht int) {
		t.Helper()
		if err := h.env.DB.QueryRow(`SELECT width_px, height_px FROM asset_files WHERE asset_id = $1 AND kind = 'edit_preview'`, asset).Scan(&w, &ht); err != nil {
			t.Fatal(err)
		}
		return w, ht
	}

	turned, upright := edit(`{"rotate": 90}`), edit(`{"rotate": 0}`)
	render(upright)
	w, ht := preview()
	render(turned)
	if w2, h2 := preview(); w2 != w || h2 != ht {
		t.Fatalf("edit_preview %dx%d after the older version rendered late, want the newer one's %dx%d", w2, h2, w, ht)
	}
	var p tasks.EditPayload
	if err := json.Unmarshal(turned.Payload, &p); err != nil {
		t.Fatal(err)
	}
	if n := h.count(`SELECT count(*) FROM edit_versions WHERE id = $1 AND applied_at IS NOT NULL`, p.EditID); n != 0 {
		t.Error("the superseded version is marked applied")
	}
}
