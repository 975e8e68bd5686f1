package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"

	"lightbox/store"
	"lightbox/testsupport/testenv"
)

// Stored bytes follow an asset through its life: nothing while in flight,
// its size once accepted, still counted when processing fails, nothing for
// duplicates and bad checksums.
func TestUsageFollowsAssets(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	usage := func() *store.Usage {
		t.Helper()
		u, err := env.Store.Usage(ctx, owner)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}

	files := testenv.Files(3)
	env.Upload(t, project, files[0])
	if u := usage(); u.BytesStored != 0 || u.FilesInFlight != 1 || u.BytesInFlight != int64(len(files[0].Data)) || u.NextExpiry == nil {
		t.Fatalf("one upload in flight: %+v", u)
	}

	res := env.Finalize(t, owner, project, files[1], files[2])
	want := int64(len(files[1].Data) + len(files[2].Data))
	if u := usage(); u.BytesStored != want || u.FilesInFlight != 1 {
		t.Fatalf("after finalize: %+v, want %d bytes stored", u, want)
	}
	dup := testenv.Upload{Data: files[1].Data}
	env.Finalize(t, owner, project, dup)
	if u := usage(); u.BytesStored != want {
		t.Fatalf("a duplicate is not kept: %+v, want %d", u, want)
	}
	env.FailJob(t, res.Jobs[0], 3, "corrupt_image")
	if u := usage(); u.BytesStored != want {
		t.Fatalf("a failed asset keeps its original: %+v, want %d", u, want)
	}
	bad := env.Upload(t, project, testenv.Files(1)...)
	if _, err := env.Store.FinalizeUploads(ctx, owner, project, []store.FinalizeItem{{AssetID: bad[0], Checksum: testenv.Checksum([]byte("other"))}}); err != nil {
		t.Fatal(err)
	}
	if u := usage(); u.BytesStored != want || u.FilesInFlight != 1 {
		t.Fatalf("a bad checksum is not kept: %+v, want %d", u, want)
	}

	// The user's own limits, 0 meaning none.
	zero, bytes := 0, int64(1<<30)
	if err := env.Store.SetQuotas(ctx, owner, store.Quotas{Bytes: &bytes, Exports: &zero}); err != nil {
		t.Fatal(err)
	}
	if u := usage(); *u.QuotaBytes != bytes || u.QuotaFilesInFlight != nil || *u.QuotaExports != 0 {
		t.Fatalf("quotas %+v", u)
	}
	err := env.Store.WithUsage(ctx, owner, func(tx *store.Store, u *store.Usage) error {
		if u.BytesStored != want {
			t.Errorf("locked read %+v", u)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// importUnderQuota records an import of two URLs for an owner who may
// hold limit bytes.
func importUnderQuota(t *testing.T, limit int64) (*testenv.Env, uuid.UUID, []store.NewImport) {
	t.Helper()
	env := testenv.New(t)
	owner, project := env.Project(t)
	items, _, _ := createImport(t, env, owner, project)
	if err := env.Store.SetQuotas(context.Background(), owner, store.Quotas{Bytes: &limit}); err != nil {
		t.Fatal(err)
	}
	return env, owner, items
}

// A download recorded again, as a retried task does when it died after
// recording its bytes: its own bytes in flight are not counted twice.
func TestBytesQuotaCountsARetriedDownloadOnce(t *testing.T) {
	env, owner, items := importUnderQuota(t, 150)
	ctx, sha := context.Background(), testenv.Checksum([]byte("photo"))
	for try := range 2 {
		if err := env.Store.RecordDownload(ctx, owner, items[0].AssetID, sha, 100, "image/jpeg", store.Limits{}); err != nil {
			t.Fatalf("try %d: %v", try+1, err)
		}
	}
	var over *store.QuotaError
	if err := env.Store.RecordDownload(ctx, owner, items[1].AssetID, sha, 100, "image/jpeg", store.Limits{}); !errors.As(err, &over) || over.Used != 100 {
		t.Fatalf("another download: %v, want refused with 100 of 150 bytes used", err)
	}
}

// Two downloads that do not both fit the bytes quota, recorded at once:
// the one that waits for the other's lock sees the bytes the other
// recorded, and is refused.
func TestBytesQuotaHoldsBetweenConcurrentDownloads(t *testing.T) {
	env, owner, items := importUnderQuota(t, 150)
	ctx, sha := context.Background(), testenv.Checksum([]byte("photo"))

	second := make(chan error, 1)
	err := env.Store.WithUsage(ctx, owner, func(tx *store.Store, u *store.Usage) error {
		if err := tx.RecordDownload(ctx, owner, items[0].AssetID, sha, 100, "image/jpeg", store.Limits{}); err != nil {
			return err
		}
		// This transaction is the only writer to the test's assets table.
		holder, err := writer(env, "assets")
		if err != nil {
			return err
		}
		go func() {
			second <- env.Store.RecordDownload(ctx, owner, items[1].AssetID, sha, 100, "image/jpeg", store.Limits{})
		}()
		return waitForWaiter(env, holder)
	})
	if err != nil {
		t.Fatal(err)
	}
	var over *store.QuotaError
	if err := <-second; !errors.As(err, &over) || over.Used != 100 || over.Requested != 100 {
		t.Fatalf("second download: %v, want refused with 100 of 150 bytes used", err)
	}
}
