package server_test

import (
	"testing"
)

// TestJobsFilesAndResultsOfAnUpload reads what an upload recorded: the
// project's and each asset's jobs, the batch's results and the files.
func TestJobsFilesAndResultsOfAnUpload(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	up := a.failedUpload(key)
	project, batch, ups := up.project, up.batch, up.ups

	r := a.do("GET", "/v1/projects/"+project+"/jobs?type=asset:ingest&limit=1", key, nil)
	expect(t, r, 200, "")
	if page := decode[pageOf[jobReply]](t, r); len(page.Items) != 1 || page.PageInfo.NextCursor == nil {
		t.Fatalf("first page of jobs: %s", r.body)
	}
	r = a.do("GET", "/v1/projects/"+project+"/jobs?status=failed", key, nil)
	expect(t, r, 200, "")
	if items := decode[pageOf[jobReply]](t, r).Items; len(items) != 1 || items[0].Error == nil {
		t.Fatalf("failed jobs: %s", r.body)
	}
	expect(t, a.do("GET", "/v1/projects/"+project+"/jobs?status=lost", key, nil), 400, "validation_failed")
	expect(t, a.do("GET", "/v1/projects/"+project+"/jobs?type=asset:paint", key, nil), 400, "validation_failed")

	r = a.do("GET", "/v1/batches/"+batch+"/results", key, nil)
	expect(t, r, 200, "")
	if res := r.json(t)["results"].([]any); len(res) != 2 || res[0].(map[string]any)["asset"] == nil {
		t.Fatalf("results: %s", r.body)
	}
	bob := a.user("bob@example.org", false)
	expect(t, a.do("GET", "/v1/batches/"+batch+"/results", bob, nil), 404, "not_found")

	r = a.do("GET", "/v1/assets/"+ups[1].AssetID+"/jobs", key, nil)
	expect(t, r, 200, "")
	if items := decode[pageOf[any]](t, r).Items; len(items) != 1 {
		t.Fatalf("asset jobs: %s", r.body)
	}
	expect(t, a.do("GET", "/v1/assets/"+ups[1].AssetID+"/jobs", bob, nil), 404, "not_found")
	expect(t, a.do("GET", "/v1/assets/"+ups[1].AssetID+"/files", key, nil), 200, "")
	expect(t, a.do("GET", "/v1/assets/"+ups[1].AssetID+"/files", bob, nil), 404, "not_found")
}
