package worker_test

import (
	"strings"
	"testing"
	"time"

	"lightbox/blob"
	"lightbox/internal/testenv"
	"lightbox/tasks"
)

// TestIngestWaitsOutABucketOutage cuts the bucket off before the worker
// reads an original: the task is retried without spending a retry, the
// asset does not fail, and once the bucket is back the work is done.
func TestIngestWaitsOutABucketOutage(t *testing.T) {
	t.Parallel()
	cfg := testenv.S3(t)
	proxy := testenv.NewProxy(t, strings.TrimPrefix(cfg.Endpoint, "http://"))
	cfg.Endpoint = "http://" + proxy.Addr
	s3, err := blob.NewS3(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessOn(t, nil, s3)
	asset := h.finalize(h.project(), "wood.jpg", readCorpus(t, "photos/wood.jpg"))
	proxy.Down()
	h.run()

	h.waitFor("the ingest to wait for storage", 5*time.Minute, func() bool {
		var code string
		h.env.DB.Get(&code, `SELECT coalesce(error_code, '') FROM jobs WHERE asset_id = $1 AND type = 'asset:ingest'`, asset)
		return code == "service_unavailable"
	})
	if a := h.asset(asset); a.Status == "failed" || a.JobStatus != "queued" {
		t.Fatalf("during the outage the asset is %s and its job %s; want neither failed", a.Status, a.JobStatus)
	}
	info, err := h.in.GetTaskInfo("default", tasks.IngestID(asset))
	if err != nil || info.Retried != 0 {
		t.Fatalf("the task during the outage: %+v %v; want it waiting with no retry spent", info, err)
	}

	proxy.Up()
	h.waitFor("the ingest to finish once the bucket is back", 5*time.Minute, func() bool {
		return h.asset(asset).JobStatus == "done"
	})
	if a := h.asset(asset); a.Status == "failed" || a.Width == nil {
		t.Fatalf("after the outage: %+v", a)
	}
}
