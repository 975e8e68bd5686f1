package worker_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"image/jpeg"
	"io"
	"testing"

	"github.com/google/uuid"

	"lightbox/blob"
	"lightbox/events"
	"lightbox/tasks"
)

type thumbRow struct {
	Status   string `db:"status"`
	Made     bool   `db:"made"`
	Files    string `db:"files"`
	Checksum string `db:"checksum"`
	Width    int    `db:"width_px"`
	Height   int    `db:"height_px"`
}

func (h *harness) thumbRow(asset uuid.UUID) thumbRow {
	h.t.Helper()
	var r thumbRow
	if err := h.env.DB.Get(&r, `SELECT a.status, a.thumbnail_at IS NOT NULL AS made,
			coalesce((SELECT string_agg(kind, ',' ORDER BY kind) FROM asset_files WHERE asset_id = a.id), '') AS files,
			coalesce(f.checksum_sha256, '') AS checksum, coalesce(f.width_px, 0) AS width_px, coalesce(f.height_px, 0) AS height_px
		FROM assets a LEFT JOIN asset_files f ON f.asset_id = a.id AND f.kind = 'thumbnail' WHERE a.id = $1`, asset); err != nil {
		h.t.Fatal(err)
	}
	return r
}

// storedThumbnail reads the thumbnail's bytes and checks they are what its
// row says.
func (h *harness) storedThumbnail(asset uuid.UUID, r thumbRow) []byte {
	h.t.Helper()
	f, _, err := h.blobs.Open(context.Background(), blob.DerivedKey(asset, blob.KindThumbnail))
	if err != nil {
		h.t.Fatal(err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		h.t.Fatal(err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != r.Checksum {
		h.t.Fatalf("the stored thumbnail's SHA-256 is not its row's %s", r.Checksum)
	}
	return data
}

// thumbnailEvents counts the project's asset.updated events that say a
// thumbnail was made, and checks none of them carries a status.
func (h *harness) thumbnailEvents(project uuid.UUID) int {
	h.t.Helper()
	evs, _, err := events.NewPublisher(h.env.Redis, events.PublisherOptions{}).Since(context.Background(), project, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		var d struct {
			Thumbnail bool    `json:"thumbnail"`
			Status    *string `json:"status"`
		}
		if ev.Name != events.AssetUpdated || json.Unmarshal(ev.Data, &d) != nil || !d.Thumbnail {
			continue
		}
		if d.Status != nil {
			h.t.Errorf("a thumbnail's event says status %q", *d.Status)
		}
		n++
	}
	return n
}

// runThumbnail and runIngest run an asset's thumbnail and ingest tasks
// as the worker does.
func (h *harness) runThumbnail(project, asset uuid.UUID) error {
	return h.w.Handler().ProcessTask(context.Background(), tasks.NewTask(tasks.ThumbnailPayload{ProjectID: project, AssetID: asset}))
}

func (h *harness) runIngest(project, asset, job uuid.UUID) error {
	return h.w.Handler().ProcessTask(context.Background(),
		tasks.NewTask(tasks.IngestPayload{Job: tasks.Job{JobID: job, ProjectID: project}, AssetID: asset}))
}

func TestThumbnailAheadOfIngestIsShownAndKept(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	project := h.project()
	asset, job := h.finalizeWithoutEnqueue(project, readCorpus(t, "photos/kleiber-6028x3391.jpg"))
	if err := h.runThumbnail(project, asset); err != nil {
		t.Fatal(err)
	}
	first := h.thumbRow(asset)
	if first.Status != "uploaded" || !first.Made || first.Files != "thumbnail" || first.Width != 320 || first.Height != 180 {
		t.Fatalf("after the thumbnail task: %+v, want uploaded with a 320×180 thumbnail and nothing else", first)
	}
	img, err := jpeg.Decode(bytes.NewReader(h.storedThumbnail(asset, first)))
	if err != nil || img.Bounds().Dx() != 320 || img.Bounds().Dy() != 180 {
		t.Fatalf("stored thumbnail: %v, %v", img, err)
	}
	if n := h.thumbnailEvents(project); n != 1 {
		t.Fatalf("%d thumbnail events, want 1", n)
	}

	// Run again, then the ingest: the thumbnail stays as it was made.
	if err := h.runThumbnail(project, asset); err != nil {
		t.Fatal(err)
	}
	if err := h.runIngest(project, asset, job); err != nil {
		t.Fatal(err)
	}
	after := h.thumbRow(asset)
	if after.Status != "cull" || after.Files != "preview,thumbnail" || after.Checksum != first.Checksum {
		t.Fatalf("after the ingest: %+v, want cull with the same thumbnail (%s) and a preview", after, first.Checksum)
	}
	h.storedThumbnail(asset, after)
	if n := h.thumbnailEvents(project); n != 1 {
		t.Fatalf("%d thumbnail events after running it again and ingesting, want 1", n)
	}
}

func TestThumbnailAfterIngestChangesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	project := h.project()
	asset, job := h.finalizeWithoutEnqueue(project, readCorpus(t, "photos/wood.jpg"))
	if err := h.runIngest(project, asset, job); err != nil {
		t.Fatal(err)
	}
	before := h.thumbRow(asset)
	if before.Status != "cull" || !before.Made || before.Files != "preview,thumbnail" {
		t.Fatalf("after the ingest alone: %+v", before)
	}
	if err := h.runThumbnail(project, asset); err != nil {
		t.Fatal(err)
	}
	if after := h.thumbRow(asset); after != before {
		t.Fatalf("the thumbnail task after the ingest changed %+v to %+v", before, after)
	}
	h.storedThumbnail(asset, before)
	if n := h.thumbnailEvents(project); n != 0 {
		t.Fatalf("%d thumbnail events, want none", n)
	}
}

// A file that does not decode: the thumbnail task ends without a word and
// without a retry; the ingest fails the asset once, with the reason.
func TestThumbnailOfACorruptFileLeavesItToIngest(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	project := h.project()
	asset, job := h.finalizeWithoutEnqueue(project, readCorpus(t, "bad/truncated-progressive.jpg"))
	if err := h.runThumbnail(project, asset); err != nil {
		t.Fatalf("thumbnail task: %v, want it to end quietly", err)
	}
	if r := h.thumbRow(asset); r.Status != "uploaded" || r.Made || r.Files != "" {
		t.Fatalf("after the thumbnail task: %+v, want uploaded with no files", r)
	}
	if err := h.runIngest(project, asset, job); !tasks.IsPermanent(err) {
		t.Fatalf("ingest: %v, want a permanent failure", err)
	}
}

// An original whose stored bytes are no longer those finalize checked: the
// ingest, which checks for both tasks, fails the asset for good and says
// why, whatever the thumbnail task made of the bytes first.
func TestAnOriginalChangedInStorageFailsItsIngest(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	project := h.project()
	asset, job := h.finalizeWithoutEnqueue(project, readCorpus(t, "photos/kleiber-6028x3391.jpg"))
	other := readCorpus(t, "photos/wood.jpg")
	if _, err := h.blobs.Put(context.Background(), h.blobKey(asset), bytes.NewReader(other), int64(len(other))); err != nil {
		t.Fatal(err)
	}
	if err := h.runThumbnail(project, asset); err != nil {
		t.Fatal(err)
	}
	if err := h.runIngest(project, asset, job); !tasks.IsPermanent(err) {
		t.Fatalf("ingest: %v, want a permanent failure", err)
	}
	if r := h.asset(asset); r.Status != "failed" || r.Code == nil || *r.Code != "original_changed" || r.JobStatus != "failed" {
		t.Fatalf("after the ingest: %+v, want the asset and its job failed with original_changed", r)
	}
}
