package server_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/blob"
	"lightbox/tasks"
	"lightbox/testsupport/testenv"
)

func TestDeleteAsset(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.startWorker()
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	_, ups := a.uploadAll(key, project, corpus(t, "photos/wood.jpg", "photos/dune.jpg"))
	gone, kept := uuid.MustParse(ups[0].AssetID), uuid.MustParse(ups[1].AssetID)
	waitCount(t, a, "both assets ready and attested", 2, `SELECT count(*) FROM assets a
		WHERE a.project_id = $1 AND a.status IN ('search', 'ai') AND EXISTS (SELECT 1 FROM attestations t WHERE t.asset_id = a.id)`, project)
	var keys []string
	if err := a.env.DB.Select(&keys, `SELECT blob_key FROM asset_files WHERE asset_id = $1
		UNION SELECT blob_key FROM assets WHERE id = $1`, gone); err != nil || len(keys) != 3 {
		t.Fatalf("files of the asset: %v %v", keys, err)
	}
	var cid string
	if err := a.env.DB.Get(&cid, `SELECT cid FROM attestations WHERE asset_id = $1`, gone); err != nil {
		t.Fatal(err)
	}

	bob := a.user("bob@example.org", false)
	expect(t, a.do("DELETE", "/v1/assets/"+gone.String(), bob, nil), 404, "not_found")
	expect(t, a.do("DELETE", "/v1/assets/"+gone.String(), key, nil), 204, "")

	// Hidden at once.
	expect(t, a.do("GET", "/v1/assets/"+gone.String(), key, nil), 404, "not_found")
	expect(t, a.do("DELETE", "/v1/assets/"+gone.String(), key, nil), 404, "not_found")
	if got := ids(a.assetList(key, project, "")); got != kept.String() {
		t.Fatalf("the list after the delete: %s", got)
	}
	// The bytes go by an asset:delete job, which shows in the project's jobs.
	waitCount(t, a, "the delete job done", 1, `SELECT count(*) FROM jobs WHERE project_id = $1 AND type = 'asset:delete' AND status = 'done'`, project)
	for _, k := range keys {
		if _, _, err := a.blobs.Open(context.Background(), k); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("%s is still stored (%v)", k, err)
		}
	}
	// The chain still holds the original's attestation; the other asset is whole.
	if n := a.count(`SELECT count(*) FROM attestations WHERE cid = $1`, cid); n != 1 {
		t.Errorf("the deleted original's attestation: %d rows, want 1", n)
	}
	expect(t, a.do("GET", "/v1/assets/"+kept.String()+"/files", key, nil), 200, "")
}

// TestDeleteRacingIngestOrEditLeavesNoFiles deletes an asset while a task
// that read it is held between two of its file writes, lets the asset's
// delete job run, then lets the task write on: once the sweeper has run
// past the task's timeout, nothing of the asset is left in storage, and
// the other asset keeps every file.
func TestDeleteRacingIngestOrEditLeavesNoFiles(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, held string // held: the write the task is held before
		edit       bool
	}{
		{"ingest", "/preview.jpg", false},
		{"edit", "/edit_thumbnail.jpg", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Room for the delete job beside the held task.
			env := testenv.New(t)
			a := startAppWith(t, env, env.Redis, options{env: map[string]string{"WORKER_CONCURRENCY": "4"}})
			held := &holdingBlobs{Store: a.blobs, suffix: c.held,
				reached: make(chan string, 1), release: make(chan struct{}), written: make(chan struct{})}
			w := a.startWorkerOn(held)
			var releaseOnce sync.Once
			release := func() { releaseOnce.Do(func() { close(held.release) }) }
			t.Cleanup(release) // before the worker stops
			key := a.user("ana@example.org", false)
			project := a.newProject(key)
			_, ups := a.uploadAll(key, project, corpus(t, "photos/wood.jpg", "photos/dune.jpg"))
			gone, kept := uuid.MustParse(ups[0].AssetID), uuid.MustParse(ups[1].AssetID)
			if c.edit {
				waitCount(t, a, "both ingested", 2, `SELECT count(*) FROM assets WHERE project_id = $1 AND status IN ('cull', 'search', 'ai')`, project)
				for _, id := range []uuid.UUID{gone, kept} {
					expect(t, a.do("POST", "/v1/assets/"+id.String()+"/edits", key, map[string]any{"params": map[string]any{"rotate": 90}}), 201, "")
				}
			}
			var heldKey string
			select {
			case heldKey = <-held.reached:
			case <-time.After(3 * time.Minute):
				t.Fatal("timed out waiting for the task to reach the held write")
			}
			// Either photo may get there first.
			if strings.Contains(heldKey, kept.String()) {
				gone, kept = kept, gone
			}

			expect(t, a.do("DELETE", "/v1/assets/"+gone.String(), key, nil), 204, "")
			waitCount(t, a, "the delete job done", 1, `SELECT count(*) FROM jobs WHERE project_id = $1 AND type = 'asset:delete' AND status = 'done'`, project)
			release()
			select {
			case <-held.written:
			case <-time.After(3 * time.Minute):
				t.Fatal("timed out waiting for the held write")
			}
			if c.edit {
				waitCount(t, a, "the other asset's edit saved", 1, `SELECT count(*) FROM asset_files WHERE asset_id = $1 AND kind = 'edit_thumbnail'`, kept)
			} else {
				waitCount(t, a, "the other asset ingested", 1, `SELECT count(*) FROM assets WHERE id = $1 AND status IN ('cull', 'search', 'ai')`, kept)
			}

			// As if the tasks' timeouts and the upload URLs had run out.
			a.env.Age(t, "blob_discards", "url_expires_at", time.Hour, "")
			if err := w.Handler().ProcessTask(context.Background(), tasks.NewSweep()); err != nil {
				t.Fatal(err)
			}
			if left := storedUnder(t, a, gone); len(left) > 0 {
				t.Errorf("files of the deleted asset still stored after the sweep: %v", left)
			}
			var keys []string
			if err := a.env.DB.Select(&keys, `SELECT blob_key FROM asset_files WHERE asset_id = $1
				UNION SELECT blob_key FROM assets WHERE id = $1`, kept); err != nil || len(keys) < 3 {
				t.Fatalf("files of the other asset: %v %v", keys, err)
			}
			for _, k := range keys {
				if _, err := a.blobs.Stat(context.Background(), k); err != nil {
					t.Errorf("the other asset's %s: %v", k, err)
				}
			}
		})
	}
}

// holdingBlobs holds the first write of a key ending in suffix until
// release closes, telling reached the key on the way in and written once
// it is stored. The write ignores its task being canceled: the delete's
// cancel is best effort and may come after a write is past stopping.
type holdingBlobs struct {
	blob.Store
	suffix  string
	once    sync.Once
	reached chan string
	release chan struct{}
	written chan struct{}
}

func (h *holdingBlobs) Put(ctx context.Context, key string, r io.Reader, limit int64) (blob.Info, error) {
	first := false
	if strings.HasSuffix(key, h.suffix) {
		h.once.Do(func() { first = true })
	}
	if !first {
		return h.Store.Put(ctx, key, r, limit)
	}
	h.reached <- key
	<-h.release
	defer close(h.written)
	return h.Store.Put(context.WithoutCancel(ctx), key, r, limit)
}

// storedUnder lists the stored files whose keys name asset.
func storedUnder(t testing.TB, a *app, asset uuid.UUID) []string {
	t.Helper()
	root := filepath.Join(a.cfg.DataDir, "blobs")
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(path, asset.String()) {
			rel, _ := filepath.Rel(root, path)
			out = append(out, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
