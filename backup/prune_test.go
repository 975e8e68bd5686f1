package backup_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"lightbox/backup"
	"lightbox/blob"
)

// TestPrune takes three backups with a photo added between each (and a
// thumbnail drawn again after the first): keeping two deletes the oldest's
// folder and the blobs only it named, and the two kept verify and
// restore. An incomplete backup newer than the kept ones is left whole,
// and no blob is deleted while it may be running; once a newer backup
// completes, it goes.
func TestPrune(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // bounds a hang only
	defer cancel()
	f := newFixture(t, diskStore(t))
	tg, dir := dirTarget(t)
	create := func() *backup.Manifest {
		t.Helper()
		f.attest(t)
		rep, err := backup.Create(ctx, tg, f.options())
		if err != nil {
			t.Fatal(err)
		}
		return rep.Manifest
	}
	ids := f.addPhotos(t, 2)
	first := create()
	if err := f.ingest(ctx, ids[:1]); err != nil { // a reprocess: its thumbnail and preview drawn again
		t.Fatal(err)
	}
	f.addPhotos(t, 1)
	second := create()
	f.addPhotos(t, 1)
	third := create()

	later := map[string]bool{}
	for _, m := range []*backup.Manifest{second, third} {
		for _, b := range m.Blobs {
			later[b.SHA256] = true
		}
	}
	var onlyFirst []string
	for _, b := range first.Blobs {
		if !later[b.SHA256] {
			onlyFirst = append(onlyFirst, b.SHA256)
		}
	}
	if len(onlyFirst) != 2 {
		t.Fatalf("%d blobs only the first backup names, want the thumbnail and preview drawn again", len(onlyFirst))
	}

	rep, err := backup.Prune(ctx, tg, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Deleted, []string{first.ID}) || !slices.Equal(rep.Kept, []string{second.ID, third.ID}) ||
		rep.Blobs != 2 || rep.BlobsLeft != "" {
		t.Fatalf("prune: %+v; want %s and its 2 blobs deleted", rep, first.ID)
	}
	if _, err := os.Stat(filepath.Join(dir, "backups", first.ID)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the first backup's folder: %v, want it gone", err)
	}
	for _, sum := range onlyFirst {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(backup.BlobPath(sum)))); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("blob %s only the first backup named: %v, want it gone", sum, err)
		}
	}
	for _, m := range []*backup.Manifest{second, third} {
		if v, err := backup.Verify(ctx, tg, m.ID, 4); err != nil || len(v.Problems) > 0 {
			t.Errorf("verify %s after the prune: %+v, %v", m.ID, v, err)
		}
		into := emptyFixture(t, diskStore(t))
		res, err := backup.Restore(ctx, tg, m.ID, into.restoreOptions())
		if err != nil || res.Originals != len(m.Blobs)/3 || !res.Chain.OK {
			t.Errorf("restore %s after the prune: %+v, %v", m.ID, res, err)
		}
	}

	// A backup stopped midway, newer than the kept ones: it may be
	// running, so its folder and every blob stay.
	f.addPhotos(t, 1)
	f.attest(t)
	o := f.options()
	o.Concurrency = 1
	if _, err := backup.Create(ctx, &failingTarget{Target: tg, left: 1, err: blob.ErrFull}, o); err == nil {
		t.Fatal("the interrupted backup completed")
	}
	before := files(t, dir)
	rep, err = backup.Prune(ctx, tg, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.KeptIncomplete) != 1 || rep.Blobs != 0 || rep.BlobsLeft == "" || !slices.Equal(rep.Deleted, []string{second.ID}) {
		t.Fatalf("prune beside an incomplete backup: %+v; want the second backup's folder deleted, no blob", rep)
	}
	incomplete := rep.KeptIncomplete[0]
	after := files(t, dir)
	for _, p := range before {
		if !slices.Contains(after, p) && filepath.Dir(filepath.Dir(p)) != "backups" {
			t.Errorf("%s deleted beside an incomplete backup", p)
		}
		if filepath.Dir(p) == filepath.Join("backups", incomplete) && !slices.Contains(after, p) {
			t.Errorf("%s of the incomplete backup deleted", p)
		}
	}

	// Overtaken by a complete backup, it goes, and the blobs only the
	// second backup named with it.
	fourth := create()
	rep, err = backup.Prune(ctx, tg, 2)
	if err != nil || !slices.Equal(rep.Deleted, []string{incomplete}) || !slices.Equal(rep.Kept, []string{third.ID, fourth.ID}) {
		t.Fatalf("prune after the next backup: %+v, %v", rep, err)
	}
	if l, err := backup.List(ctx, tg); err != nil || len(l.Incomplete) != 0 || len(l.Complete) != 2 {
		t.Fatalf("listed %+v, %v", l, err)
	}
	for _, m := range []*backup.Manifest{third, fourth} {
		if _, err := backup.Verify(ctx, tg, m.ID, 4); err != nil {
			t.Errorf("verify %s: %v", m.ID, err)
		}
	}
	if _, err := backup.Prune(ctx, tg, 0); err == nil {
		t.Error("keep 0 was taken")
	}
}

// files lists the files under dir, relative to it.
func files(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
