package worker_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lightbox/tasks"
)

// An internal failure (here the original turned into a directory) is
// recorded for the user with a stable code and a plain message: the raw
// error, with its file paths, stays in the worker's log.
func TestInternalErrorsDoNotReachUsers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	project := h.project()
	asset, jobID := h.finalizeWithoutEnqueue(project, readCorpus(t, "photos/wood.jpg"))
	path := filepath.Join(h.cfg.DataDir, "blobs", filepath.FromSlash(h.blobKey(asset)))
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	j, err := h.env.Store.JobByID(context.Background(), jobID)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.w.Handler().ProcessTask(context.Background(), tasks.New(j.Type, j.Payload, j.TaskID)); err == nil {
		t.Fatal("ingest of a vanished original succeeded")
	}
	var row struct {
		Code    string `db:"code"`
		Message string `db:"message"`
	}
	if err := h.env.DB.Get(&row, `SELECT coalesce(error_code, '') AS code, coalesce(error_message, '') AS message FROM jobs WHERE id = $1`, jobID); err != nil {
		t.Fatal(err)
	}
	if row.Code != "task_failed" || strings.Contains(row.Message, h.cfg.DataDir) || strings.Contains(row.Message, asset.String()) {
		t.Fatalf("job error %q: %q, want a code and no internal detail", row.Code, row.Message)
	}
}
