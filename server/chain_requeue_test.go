package server_test

import (
	"testing"
)

func TestAdminRequeuesAbandonedAttestations(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	admin := a.user("root@example.org", true)
	project := a.newProject(key)
	r, ups := a.uploadAll(key, project, corpus(t, "photos/wood.jpg", "photos/dune.jpg"))
	expect(t, r, 200, "")
	// Five failed publishes abandoned both.
	if _, err := a.env.DB.Exec(`UPDATE attestation_queue SET status = 'abandoned', attempts = 5, last_error = 'ledger refused'`); err != nil {
		t.Fatal(err)
	}

	expect(t, a.do("POST", "/v1/admin/chain/requeue", key, nil), 403, "forbidden")
	r = a.do("POST", "/v1/admin/chain/requeue", admin, map[string]any{"assetIds": []string{ups[0].AssetID}})
	expect(t, r, 200, "")
	if n := r.json(t)["requeued"]; n != float64(1) {
		t.Fatalf("requeued %v, want the one asset named", n)
	}
	status := func(asset string) (string, float64) {
		t.Helper()
		r := a.do("GET", "/v1/assets/"+asset+"/attestation", key, nil)
		expect(t, r, 200, "")
		m := r.json(t)
		return m["status"].(string), m["attempts"].(float64)
	}
	if st, n := status(ups[0].AssetID); st != "pending" || n != 0 {
		t.Fatalf("named asset: %s after %v attempts, want pending and a fresh count", st, n)
	}
	if st, _ := status(ups[1].AssetID); st != "abandoned" {
		t.Fatalf("the other asset was queued again: %s", st)
	}

	// Without a body, every abandoned item goes back.
	r = a.do("POST", "/v1/admin/chain/requeue", admin, nil)
	expect(t, r, 200, "")
	if n := r.json(t)["requeued"]; n != float64(1) {
		t.Fatalf("requeued %v, want the last abandoned one", n)
	}
	if st, _ := status(ups[1].AssetID); st != "pending" {
		t.Fatalf("asset after requeueing all: %s", st)
	}
}
