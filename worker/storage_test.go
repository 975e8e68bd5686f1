package worker_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"lightbox/blob"
	"lightbox/tasks"
	"lightbox/testsupport/testenv"
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

	testenv.Eventually(h.t, "the ingest to wait for storage", patience, func() bool {
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
	testenv.Eventually(h.t, "the ingest to finish once the bucket is back", patience, func() bool {
		return h.asset(asset).JobStatus == "done"
	})
	if a := h.asset(asset); a.Status == "failed" || a.Width == nil {
		t.Fatalf("after the outage: %+v", a)
	}
}

// TestIngestWaitsOutAFullDisk keeps the blobs on a small tmpfs and fills
// it before the worker writes an ingest's files: the task waits for room
// without spending a retry, the asset does not fail, and once room is
// made the work is done. Before, each run spent a retry and a disk full
// for a minute failed the asset.
func TestIngestWaitsOutAFullDisk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=8m"); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (%v): this test needs root or CAP_SYS_ADMIN", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	disk, err := blob.NewDisk(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessOn(t, map[string]string{"CLUSTER_DELAY": "1h"}, disk)
	asset := h.finalize(h.project(), "wood.jpg", readCorpus(t, "photos/wood.jpg"))
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for chunk := make([]byte, 64<<10); ; {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()
	h.run()

	testenv.Eventually(h.t, "the ingest to wait for room", patience, func() bool {
		var code string
		h.env.DB.Get(&code, `SELECT coalesce(error_code, '') FROM jobs WHERE asset_id = $1 AND type = 'asset:ingest'`, asset)
		info, err := h.in.GetTaskInfo("default", tasks.IngestID(asset))
		if err == nil && info.Retried != 0 {
			t.Fatalf("the ingest spent %d retries on the full disk (last error %q)", info.Retried, info.LastErr)
		}
		return code == "service_unavailable"
	})
	if a := h.asset(asset); a.Status == "failed" || a.JobStatus != "queued" {
		t.Fatalf("while the disk is full the asset is %s and its job %s; want neither failed", a.Status, a.JobStatus)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(h.t, "the ingest to finish once there is room", patience, func() bool {
		return h.asset(asset).JobStatus == "done"
	})
}
