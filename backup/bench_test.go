package backup_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"lightbox/backup"
	"lightbox/blob"
)

// BenchmarkBackup2000 backs up a project of 2,000 photos (an original of
// 1 MiB, a thumbnail and a preview each: 6,000 files, 2 GiB) from disk to
// disk, backs it
// up again with nothing new, and restores it into an empty service,
// beside the baseline measured in the same run: the same files copied
// into a new folder with a write and an fsync each, as plain disk writes.
// incremental_%_of_first is the second backup's time over the first's
// (the goal is at most 10 %); x_copy_first and x_copy_restore are each
// run's time over the baseline's.
//
//	go test -run '^$' -bench BenchmarkBackup2000 -benchtime 2x ./backup
func BenchmarkBackup2000(b *testing.B) {
	const photos = 2000
	ctx := context.Background()
	f := newFixture(b, diskStore(b))
	// Originals smaller than a camera's (a few MiB) keep the run's 8 GiB
	// within a test machine's disk; per-file costs weigh the more for it.
	f.original = 1 << 20
	f.addPhotos(b, photos)
	keys := liveKeys(b, f.live)
	if len(keys) != 3*photos {
		b.Fatalf("%d files stored, want %d", len(keys), 3*photos)
	}

	var first, incremental, restore, copying time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		start := time.Now()
		copyFiles(b, f.live, keys)
		copying += time.Since(start)
		tg, _ := dirTarget(b)
		into := emptyFixture(b, diskStore(b))
		b.StartTimer()

		start = time.Now()
		rep, err := backup.Create(ctx, tg, f.options())
		if err != nil {
			b.Fatal(err)
		}
		first += time.Since(start)
		if rep.Copied != 3*photos {
			b.Fatalf("the first backup copied %d files, want %d", rep.Copied, 3*photos)
		}

		start = time.Now()
		rep, err = backup.Create(ctx, tg, f.options())
		if err != nil {
			b.Fatal(err)
		}
		incremental += time.Since(start)
		if rep.Copied != 0 {
			b.Fatalf("the second backup copied %d files, want none", rep.Copied)
		}

		start = time.Now()
		if _, err := backup.Restore(ctx, tg, rep.Manifest.ID, into.restoreOptions()); err != nil {
			b.Fatal(err)
		}
		restore += time.Since(start)
	}
	n := float64(b.N)
	b.ReportMetric(first.Seconds()/n, "first_s")
	b.ReportMetric(incremental.Seconds()/n, "incremental_s")
	b.ReportMetric(restore.Seconds()/n, "restore_s")
	b.ReportMetric(copying.Seconds()/n, "copy_s")
	b.ReportMetric(100*incremental.Seconds()/first.Seconds(), "incremental_%_of_first")
	b.ReportMetric(first.Seconds()/copying.Seconds(), "x_copy_first")
	b.ReportMetric(restore.Seconds()/copying.Seconds(), "x_copy_restore")
}

// copyFiles is the baseline: every file of s written to a new folder, one
// after another, each synced to disk as a backup's are.
func copyFiles(b *testing.B, s blob.Store, keys []string) {
	b.Helper()
	dir := b.TempDir()
	buf := make([]byte, 1<<20)
	for i, k := range keys {
		r, _, err := s.Open(context.Background(), k)
		if err != nil {
			b.Fatal(err)
		}
		out, err := os.Create(filepath.Join(dir, strconv.Itoa(i)))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.CopyBuffer(out, r, buf); err != nil {
			b.Fatal(err)
		}
		r.Close()
		if err := out.Sync(); err != nil {
			b.Fatal(err)
		}
		out.Close()
	}
}
