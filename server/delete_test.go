package server_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/blob"
)

func TestDeleteAsset(t *testing.T) {
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

// waitCount waits, up to minutes, for query to count want.
func waitCount(t testing.TB, a *app, what string, want int, query string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for a.count(query, args...) != want {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
