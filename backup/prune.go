package backup

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"lightbox/blob"
)

// PruneReport says what Prune deleted and kept.
type PruneReport struct {
	// Kept are the complete backups kept, oldest first; KeptIncomplete
	// the incomplete ones, newer than the newest complete backup, which
	// may be running.
	Kept           []string
	KeptIncomplete []string
	// Deleted are the backups whose folders were deleted, complete or
	// not, oldest first.
	Deleted []string
	// Blobs and BlobBytes count the blobs deleted, which no kept backup
	// named.
	Blobs     int
	BlobBytes int64
	// BlobsLeft is why no blob was deleted, when that was held back.
	BlobsLeft string
}

// Prune keeps the newest keep complete backups of t and deletes the rest:
// the folders of older complete backups and of incomplete ones older than
// the newest complete backup, then the blobs no kept backup names. Blobs
// are deleted only while no incomplete backup is kept, and only those
// written before Prune began (see the package doc).
func Prune(ctx context.Context, t Target, keep int) (*PruneReport, error) {
	if keep < 1 {
		return nil, fmt.Errorf("keep %d backups: at least one is kept", keep)
	}
	began := time.Now()
	complete, incomplete, err := ids(ctx, t)
	if err != nil {
		return nil, err
	}
	rep := &PruneReport{}
	cut := max(0, len(complete)-keep)
	rep.Kept = complete[cut:]
	var newest string
	if len(complete) > 0 {
		newest = complete[len(complete)-1]
	}
	for _, id := range incomplete {
		if newest != "" && compareIDs(id, newest) < 0 {
			rep.Deleted = append(rep.Deleted, id)
		} else {
			rep.KeptIncomplete = append(rep.KeptIncomplete, id)
		}
	}
	rep.Deleted = append(rep.Deleted, complete[:cut]...)
	slices.SortFunc(rep.Deleted, compareIDs)

	// The kept manifests are read before anything is deleted: one that
	// cannot be read stops the prune with nothing lost.
	named := map[string]bool{}
	for _, id := range rep.Kept {
		m, err := readManifest(ctx, t, id)
		if err != nil {
			return nil, targetError(t, err)
		}
		for _, b := range m.Blobs {
			named[b.SHA256] = true
		}
	}
	for _, id := range rep.Deleted {
		if err := deleteBackup(ctx, t, id); err != nil {
			return rep, err
		}
	}

	if len(rep.KeptIncomplete) > 0 {
		rep.BlobsLeft = fmt.Sprintf("backup %s is incomplete and may be running: it can name any blob the target holds",
			strings.Join(rep.KeptIncomplete, ", "))
		return rep, nil
	}
	var unnamed []blob.Info
	err = t.List(ctx, "blobs/", func(i blob.Info) error {
		sum := i.Key[strings.LastIndex(i.Key, "/")+1:]
		if len(sum) == sha256.Size*2 && i.Key == BlobPath(sum) && !named[sum] && i.ModTime.Before(began) {
			unnamed = append(unnamed, i)
		}
		return nil
	})
	if err != nil {
		return rep, targetError(t, err)
	}
	for _, i := range unnamed {
		if err := t.Delete(ctx, i.Key); err != nil {
			return rep, targetError(t, err)
		}
		rep.Blobs++
		rep.BlobBytes += i.Size
	}

	// A backup begun since the listing may have found a deleted blob in
	// the target and counted on it: it is named, to be verified.
	if rep.Blobs > 0 {
		now, later, err := ids(ctx, t)
		if err != nil {
			return rep, err
		}
		var started []string
		for _, id := range append(now, later...) {
			if !slices.Contains(complete, id) && !slices.Contains(incomplete, id) {
				started = append(started, id)
			}
		}
		if len(started) > 0 {
			return rep, fmt.Errorf("%w: backup %s began while blobs were deleted; verify it", ErrPruneRaced, strings.Join(started, ", "))
		}
	}
	return rep, nil
}

// ErrPruneRaced is a backup that began while Prune deleted blobs, which
// may name one of them.
var ErrPruneRaced = errors.New("a backup ran beside the prune")

// deleteBackup deletes backup id's folder, its manifest first: a
// deletion stopped midway leaves an incomplete backup, never a complete
// one lacking its dump.
func deleteBackup(ctx context.Context, t Target, id string) error {
	var keys []string
	err := t.List(ctx, backupDir(id), func(i blob.Info) error {
		keys = append(keys, i.Key)
		return nil
	})
	if err != nil {
		return targetError(t, err)
	}
	slices.SortStableFunc(keys, func(a, b string) int {
		am, bm := a == manifestPath(id), b == manifestPath(id)
		switch {
		case am && !bm:
			return -1
		case bm && !am:
			return 1
		}
		return 0
	})
	for _, k := range keys {
		if err := t.Delete(ctx, k); err != nil {
			return fmt.Errorf("delete backup %s: %w", id, targetError(t, err))
		}
	}
	return nil
}
