package server_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/uuid"
)

// TestOperatorsAPI walks the admin routes behind the admin page with a
// failed job of another user: queues, failed jobs and batches across
// users, and the chain.
func TestOperatorsAPI(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	admin := a.user("root@example.org", true)
	ana := a.user("ana@example.org", false)
	up := a.failedUpload(ana)
	batch, failed := up.batch, up.jobs[0]

	expect(t, a.do("GET", "/v1/admin/queues", ana, nil), 403, "forbidden")
	r := a.do("GET", "/v1/admin/queues", admin, nil)
	expect(t, r, 200, "")
	var names []string
	for _, q := range decode[pageOf[struct{ Name string }]](t, r).Items {
		names = append(names, q.Name)
	}
	// Those that never held a task too, the faces queue among them.
	if want := slices.Sorted(maps.Keys(a.cfg.QueueWeights)); !slices.Equal(names, want) || !slices.Contains(names, "faces") {
		t.Fatalf("queues %v, want the configured %v: %s", names, want, r.body)
	}
	r = a.do("POST", "/v1/admin/queues/low/pause", admin, nil)
	expect(t, r, 200, "")
	if r.json(t)["paused"] != true {
		t.Fatalf("pause: %s", r.body)
	}
	expect(t, a.do("POST", "/v1/admin/queues/low/pause", admin, nil), 200, "")
	expect(t, a.do("POST", "/v1/admin/queues/low/resume", admin, nil), 200, "")
	expect(t, a.do("POST", "/v1/admin/queues/nowhere/pause", admin, nil), 404, "queue_not_found")

	r = a.do("GET", "/v1/admin/jobs", admin, nil)
	expect(t, r, 200, "")
	items := decode[pageOf[jobReply]](t, r).Items
	if len(items) != 1 || items[0].ID != failed || items[0].OwnerEmail != "ana@example.org" {
		t.Fatalf("failed jobs: %s", r.body)
	}
	expect(t, a.do("GET", "/v1/admin/jobs?status=running", admin, nil), 200, "")
	expect(t, a.do("GET", "/v1/admin/jobs?status=lost", admin, nil), 400, "validation_failed")
	r = a.do("GET", "/v1/admin/batches", admin, nil)
	expect(t, r, 200, "")
	if items := decode[pageOf[created]](t, r).Items; len(items) != 1 || items[0].ID != batch {
		t.Fatalf("batches with failures: %s", r.body)
	}

	expect(t, a.do("POST", "/v1/admin/jobs/"+up.jobs[1]+"/retry", admin, nil), 409, "job_not_failed")
	expect(t, a.do("POST", "/v1/admin/jobs/"+failed+"/retry", admin, nil), 202, "")
	a.env.FailJob(t, uuid.MustParse(failed), 4, "task_failed")
	expect(t, a.do("POST", "/v1/admin/batches/"+batch+"/retry", admin, nil), 202, "")
	expect(t, a.do("POST", "/v1/admin/batches/"+uuid.NewString()+"/retry", admin, nil), 404, "not_found")
	a.env.FailJob(t, uuid.MustParse(failed), 4, "task_failed")
	r = a.do("DELETE", "/v1/admin/jobs/"+failed, admin, nil)
	expect(t, r, 200, "")
	if r.json(t)["status"] != "canceled" {
		t.Fatalf("deleted job: %s", r.body)
	}
	expect(t, a.do("DELETE", "/v1/admin/jobs/"+failed, admin, nil), 409, "job_not_failed")

	r = a.do("GET", "/v1/admin/chain", admin, nil)
	expect(t, r, 200, "")
	if r.json(t)["lastVerify"] != nil {
		t.Fatalf("a verification before any: %s", r.body)
	}
	r = a.do("POST", "/v1/admin/chain/verify", admin, nil)
	expect(t, r, 200, "")
	if v := r.json(t); v["ok"] != true || v["by"] != "root@example.org" {
		t.Fatalf("verify: %s", r.body)
	}
	r = a.do("GET", "/v1/admin/chain", admin, nil)
	expect(t, r, 200, "")
	if r.json(t)["lastVerify"] == nil {
		t.Fatalf("the verification is not kept: %s", r.body)
	}
}
