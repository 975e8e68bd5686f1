package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/app"
	"lightbox/events"
	"lightbox/jobs"
	"lightbox/store"
	"lightbox/testsupport/testenv"
)

// newApp is an App on the test's own Postgres and Redis that hands over at
// most exportsPerUser exports of one user at once, and publishes events.
func newApp(t *testing.T, env *testenv.Env, exportsPerUser int) *app.App {
	t.Helper()
	opt, err := asynq.ParseRedisURI(env.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	client, inspector := asynq.NewClient(opt), asynq.NewInspector(opt)
	t.Cleanup(func() { client.Close(); inspector.Close() })
	d := jobs.New(jobs.Config{Store: env.Store, Queue: client, Inspector: inspector, Redis: env.Redis, ExportsPerUser: exportsPerUser})
	return app.New(app.Config{Jobs: d, Quotas: store.Limits{Exports: 10}, Events: events.NewPublisher(env.Redis, events.PublisherOptions{})})
}

// A deleted photo leaves the project's open views at once: the delete
// tells them, with the asset's id.
func TestDeletingAPhotoTellsOpenViews(t *testing.T) {
	env := testenv.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := newApp(t, env, 0)
	owner, project := env.Project(t)
	asset := env.Finalize(t, owner, project, testenv.Files(1)...).Assets[0].AssetID
	hub := events.NewHub(env.Redis, slog.Default())
	defer hub.Close()
	sub, err := hub.Subscribe(ctx, project, events.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := a.DeleteAsset(ctx, slog.Default(), owner, asset); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-sub.Events():
		var data struct {
			AssetID uuid.UUID `json:"assetId"`
			Deleted bool      `json:"deleted"`
		}
		if err := json.Unmarshal(ev.Data, &data); err != nil || ev.Name != events.AssetUpdated || data.AssetID != asset || !data.Deleted {
			t.Fatalf("got %s %s (%v), want asset.updated of %s, deleted", ev.Name, ev.Data, err, asset)
		}
	case <-time.After(time.Minute):
		t.Fatal("no event of the delete")
	}
}

// Canceling a user's running export hands their next waiting one over at
// once, as any batch that ends makes room under the caps; it does not wait
// for the sweep.
func TestCancelingAnExportHandsTheNextOneOver(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	a := newApp(t, env, 1)
	owner, project := env.Project(t)
	asset := env.Finalize(t, owner, project, testenv.Files(1)...).Assets[0].AssetID
	export := func() *store.Export {
		t.Helper()
		e := &store.Export{ID: uuid.New(), ProjectID: project, UserID: owner, Preset: "web", Settings: json.RawMessage(`{}`),
			TTL: time.Hour, AssetIDs: []uuid.UUID{asset}}
		if err := a.Export(ctx, e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	handedOver := func(e *store.Export) bool {
		t.Helper()
		j, err := env.Store.JobByID(ctx, *e.JobID)
		if err != nil {
			t.Fatal(err)
		}
		return j.EnqueuedAt != nil
	}
	first, second := export(), export()
	if !handedOver(first) || handedOver(second) {
		t.Fatalf("handed over: first %v, second %v; want the first alone (one export of a user at a time)", handedOver(first), handedOver(second))
	}
	e, canceled, err := a.CancelExport(ctx, slog.Default(), first)
	if err != nil || !canceled || e.Status != store.JobCanceled {
		t.Fatalf("cancel: %+v, %v, %v", e, canceled, err)
	}
	if !handedOver(second) {
		t.Error("the second export still waits after the first was canceled")
	}
}

// A user at their exports quota is refused with a QuotaError that says so.
func TestExportPastItsQuotaIsRefused(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	a := newApp(t, env, 0)
	a.Quotas = store.Limits{Exports: 1}
	owner, project := env.Project(t)
	for i, want := range []bool{true, false} {
		e := &store.Export{ID: uuid.New(), ProjectID: project, UserID: owner, Preset: "web", Settings: json.RawMessage(`{}`), TTL: time.Hour}
		err := a.Export(ctx, e)
		var q *app.QuotaError
		switch {
		case want && err != nil:
			t.Fatalf("export %d: %v", i+1, err)
		case !want && (!errors.As(err, &q) || q.For != app.ForExport || q.Quota != store.QuotaExports || q.Limit != 1):
			t.Fatalf("export %d past the quota: %v, want a QuotaError for an export", i+1, err)
		}
	}
}

func TestCheckUploadsNamesWhatIsWrong(t *testing.T) {
	offset := time.Date(2026, 5, 1, 12, 0, 0, 0, time.FixedZone("", 17*3600))
	cases := []struct {
		name  string
		files []app.UploadFile
		check func(t *testing.T, files []app.UploadFile, err error)
	}{
		{"a raw sent as octet-stream is recorded as its raw type", []app.UploadFile{{Filename: "IMG_1.CR3", ByteSize: 10, ContentType: "application/octet-stream"}},
			func(t *testing.T, files []app.UploadFile, err error) {
				if err != nil || files[0].ContentType != "image/x-canon-cr3" {
					t.Errorf("got %+v, %v", files, err)
				}
			}},
		{"an unsupported type alone is UnsupportedError", []app.UploadFile{{Filename: "a.psd", ByteSize: 10, ContentType: "image/vnd.adobe.photoshop"}},
			func(t *testing.T, _ []app.UploadFile, err error) {
				var u *app.UnsupportedError
				if !errors.As(err, &u) || u.Fields["files[0].contentType"] == "" {
					t.Errorf("got %v", err)
				}
			}},
		{"with other problems every field is named", []app.UploadFile{
			{Filename: "a/b.jpg", ByteSize: 0, ContentType: "image/jpeg", CapturedAt: &offset},
			{Filename: "c.psd", ByteSize: 10, ContentType: "image/vnd.adobe.photoshop"}},
			func(t *testing.T, _ []app.UploadFile, err error) {
				var f app.FieldErrors
				if !errors.As(err, &f) {
					t.Fatalf("got %v", err)
				}
				for _, k := range []string{"files[0].filename", "files[0].byteSize", "files[0].capturedAt", "files[1].contentType"} {
					if f[k] == "" {
						t.Errorf("%s is not named: %v", k, f)
					}
				}
			}},
		{"no files", nil, func(t *testing.T, _ []app.UploadFile, err error) {
			var f app.FieldErrors
			if !errors.As(err, &f) || f["files"] == "" {
				t.Errorf("got %v", err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files, err := app.CheckUploads(c.files, 1<<20)
			c.check(t, files, err)
		})
	}
}
