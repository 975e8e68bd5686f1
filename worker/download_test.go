package worker_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"lightbox/app"
	"lightbox/blob"
	"lightbox/store"
	"lightbox/tasks"
	"lightbox/testsupport/testenv"
)

// importURLs records and enqueues an import of urls, as the API does.
func (h *harness) importURLs(project uuid.UUID, urls ...string) []uuid.UUID {
	h.t.Helper()
	items := make([]store.NewImport, len(urls))
	for i, u := range urls {
		id := uuid.New()
		items[i] = store.NewImport{AssetID: id, URL: u, Filename: "x.jpg", BlobKey: blob.OriginalKey(project, id)}
	}
	var recorded []store.Job
	h.env.Tx(h.t, func(tx *store.Store) (err error) {
		recorded, err = app.RecordImport(context.Background(), tx, h.owner, project, items)
		return err
	})
	ids := make([]uuid.UUID, len(recorded))
	for i, j := range recorded {
		if err := tasks.Enqueue(context.Background(), h.queue, tasks.New(j.Type, j.Payload, j.TaskID)); err != nil {
			h.t.Fatal(err)
		}
		ids[i] = *j.AssetID
	}
	return ids
}

// waitImportsSettled waits until every asset is past its import and
// ingest, and the import batch has ended: the batch ends once the last
// job's state is written, which can come after the assets' own.
func (h *harness) waitImportsSettled() {
	h.t.Helper()
	testenv.Eventually(h.t, "imports to settle", patience, func() bool {
		return h.count(`SELECT count(*) FROM assets WHERE status IN ('pending_upload', 'uploaded', 'cull')`) == 0 &&
			h.count(`SELECT count(*) FROM batches WHERE kind = 'import' AND status = 'running'`) == 0
	})
}

func (h *harness) importStatus(asset uuid.UUID) (status, code string) {
	var r struct {
		Status string  `db:"status"`
		Code   *string `db:"error_code"`
	}
	h.env.DB.Get(&r, `SELECT status, error_code FROM assets WHERE id = $1`, asset)
	return r.Status, deref(r.Code)
}

func photoServer(t *testing.T) *httptest.Server {
	wood := readCorpus(t, "photos/wood.jpg")
	mux := http.NewServeMux()
	mux.HandleFunc("/wood.jpg", func(w http.ResponseWriter, r *http.Request) { w.Write(wood) })
	mux.HandleFunc("/page.html", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<!doctype html><p>not a photo")) })
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/wood.jpg", http.StatusFound) })
	mux.HandleFunc("/gone", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestImportFromAnAllowedLoopbackServer(t *testing.T) {
	t.Parallel()
	srv := photoServer(t)
	h := newHarness(t, map[string]string{"DOWNLOAD_ALLOW_NETS": "127.0.0.1/32", "CLUSTER_DELAY": "1s"})
	project := h.project()
	ids := h.importURLs(project, srv.URL+"/wood.jpg", srv.URL+"/moved", srv.URL+"/page.html", srv.URL+"/gone")
	h.run()
	h.waitImportsSettled()
	// The redirect leads to the same bytes: whichever finished second is
	// a duplicate of the other, which went through the pipeline.
	direct, _ := h.importStatus(ids[0])
	moved, _ := h.importStatus(ids[1])
	live := map[string]bool{"search": true, "ai": true}
	if !(live[direct] && moved == "duplicate" || live[moved] && direct == "duplicate") {
		t.Fatalf("direct import %s, redirected import %s: want one processed and one duplicate", direct, moved)
	}
	if st, code := h.importStatus(ids[2]); st != "failed" || code != "unsupported_format" {
		t.Fatalf("HTML page: %s %s", st, code)
	}
	if st, code := h.importStatus(ids[3]); st != "failed" || code != "download_failed" {
		t.Fatalf("404: %s %s", st, code)
	}
	// The batch holds the downloads and the ingest that followed.
	var b struct {
		Status string `db:"status"`
		Total  int    `db:"total"`
	}
	h.env.DB.Get(&b, `SELECT status, total FROM batches WHERE kind = 'import'`)
	if b.Status != "partial" || b.Total < 5 {
		t.Fatalf("import batch %+v, want partial with downloads and ingests", b)
	}
}

// A server that answers 200 and then drops the connection before the
// first byte of the body: network trouble, retried, not a file refused as
// "unsupported_format" for good.
func TestImportRetriesABodyThatBrokeOff(t *testing.T) {
	t.Parallel()
	wood := readCorpus(t, "photos/wood.jpg")
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Content-Length", strconv.Itoa(len(wood)))
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		w.Write(wood)
	}))
	t.Cleanup(srv.Close)
	h := newHarness(t, map[string]string{"DOWNLOAD_ALLOW_NETS": "127.0.0.1/32", "CLUSTER_DELAY": "1s"})
	ids := h.importURLs(h.project(), srv.URL+"/wood.jpg")
	h.run()
	h.waitImportsSettled()
	if st, code := h.importStatus(ids[0]); st != "search" && st != "ai" {
		t.Fatalf("import %s %s, want it fetched again and processed", st, code)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
}

func TestImportRefusesLoopbackWithoutTheAllowlist(t *testing.T) {
	t.Parallel()
	srv := photoServer(t)
	h := newHarness(t, nil)
	project := h.project()
	ids := h.importURLs(project, srv.URL+"/wood.jpg")
	h.run()
	testenv.Eventually(h.t, "the import to fail", patience, func() bool {
		st, _ := h.importStatus(ids[0])
		return st == "failed"
	})
	if _, code := h.importStatus(ids[0]); code != "forbidden_address" {
		t.Fatalf("code %s, want forbidden_address", code)
	}
	if n := h.count(`SELECT attempt FROM jobs WHERE asset_id = $1`, ids[0]); n != 1 {
		t.Fatalf("refused import ran %d times, want once", n)
	}
}

// Downloads are checked against the owner's bytes quota once their size is
// known: of two photos that do not both fit, one is kept and the other
// fails with quota_exceeded, its bytes deleted.
func TestImportPastTheBytesQuotaFailsWithQuotaExceeded(t *testing.T) {
	t.Parallel()
	photos := map[string][]byte{"/a.jpg": readCorpus(t, "photos/wood.jpg"), "/b.jpg": readCorpus(t, "photos/dune.jpg")}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(photos[r.URL.Path]) }))
	t.Cleanup(srv.Close)
	h := newHarness(t, map[string]string{"DOWNLOAD_ALLOW_NETS": "127.0.0.1/32", "CLUSTER_DELAY": "1s"})
	a, b := int64(len(photos["/a.jpg"])), int64(len(photos["/b.jpg"]))
	limit := max(a, b) + min(a, b) - 1
	if err := h.env.Store.SetQuotas(context.Background(), h.owner, store.Quotas{Bytes: &limit}); err != nil {
		t.Fatal(err)
	}
	project := h.project()
	ids := h.importURLs(project, srv.URL+"/a.jpg", srv.URL+"/b.jpg")
	h.run()
	h.waitImportsSettled()
	kept, refused := -1, -1
	for i, id := range ids {
		switch st, code := h.importStatus(id); {
		case st == "failed" && code == "quota_exceeded":
			refused = i
		case st == "search" || st == "ai":
			kept = i
		default:
			t.Fatalf("import %d: %s %s", i, st, code)
		}
	}
	if kept < 0 || refused < 0 {
		t.Fatalf("kept %d, refused %d: want one of each", kept, refused)
	}
	if _, err := h.blobs.Stat(context.Background(), blob.OriginalKey(project, ids[refused])); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("the refused download's bytes: %v, want deleted", err)
	}
	u, err := h.env.Store.Usage(context.Background(), h.owner)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(len(photos[[]string{"/a.jpg", "/b.jpg"}[kept]])); u.BytesStored != want || u.BytesInFlight != 0 {
		t.Fatalf("stored %d, in flight %d; want %d and 0", u.BytesStored, u.BytesInFlight, want)
	}
}
