package backup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"lightbox/blob"
)

// Format is the manifest's version; a later Lightbox that changes the
// layout writes another and still reads this one.
const Format = 1

// Manifest is a backup's table of contents. It is written last: a backup
// is complete exactly when its manifest exists.
type Manifest struct {
	Format     int       `json:"format"`
	ID         string    `json:"id"`
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt"`
	// Lightbox is the version of the lightbox that took it.
	Lightbox string `json:"lightbox,omitempty"`
	// SchemaVersion is the newest migration the database had applied.
	SchemaVersion int       `json:"schemaVersion"`
	ChainHead     ChainHead `json:"chainHead"`
	// ChainKeys are the public keys the chain verifies under, when the
	// backup could read the signing key.
	ChainKeys     *ChainKeys `json:"chainKeys,omitempty"`
	OriginalsOnly bool       `json:"originalsOnly"`
	Database      File       `json:"database"`
	// Ledger is the chain's file ledger; none when the ledger is an HTTP
	// log kept elsewhere.
	Ledger  *File `json:"ledger,omitempty"`
	Secrets *File `json:"secrets,omitempty"`
	// Blobs are the stored files the database's rows named, each kept
	// under BlobPath(SHA256).
	Blobs []Blob `json:"blobs"`
	// Missing are files rows named that storage did not hold when they
	// were copied.
	Missing []Missing `json:"missing,omitempty"`
}

// ChainHead is the chain's head in the database's snapshot.
type ChainHead struct {
	Seq  int64  `json:"seq"`
	TxID string `json:"txId"`
	CID  string `json:"cid"`
}

// ChainKeys are Ed25519 public keys in hex.
type ChainKeys struct {
	Current string   `json:"current"`
	Retired []string `json:"retired,omitempty"`
}

// File is one file of the backup's own folder.
type File struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Blob is one stored object of the service, by its key there.
type Blob struct {
	Key    string `json:"key"`
	Kind   string `json:"kind"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Missing is a file a row named that was not in storage.
type Missing struct {
	Key    string `json:"key"`
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
}

// Reasons a named file is missing.
const (
	// GoneSinceSnapshot: no row names it any more (a photo deleted, an
	// export expired while the backup ran); the restored row lacks it.
	GoneSinceSnapshot = "deleted after the snapshot"
	// NotStored: a row still names it but storage has no such object.
	NotStored = "named by a row but not in storage"
	// NotUploaded: an upload not finalized, or failed, whose bytes never
	// arrived or were discarded; nothing is lost.
	NotUploaded = "never uploaded or discarded"
)

// Bytes sums the sizes of the backup's own files and of the blobs it
// names (shared blobs count in every backup naming them).
func (m *Manifest) Bytes() int64 {
	n := m.Database.Size
	for _, f := range []*File{m.Ledger, m.Secrets} {
		if f != nil {
			n += f.Size
		}
	}
	for _, b := range m.Blobs {
		n += b.Size
	}
	return n
}

// Kinds of blob in a manifest: the asset_files kinds, and these.
const (
	KindOriginal = "original"
	KindExport   = "export"
	KindGallery  = "gallery_preview"
)

// BlobPath is where a blob with SHA-256 sum is kept in a target: by
// content, so blobs are shared by every backup and a file rewritten at the
// same key in the service never overwrites what an older backup holds.
func BlobPath(sum string) string { return "blobs/" + sum[:2] + "/" + sum }

// backupDir is the folder of backup id's own files.
func backupDir(id string) string { return "backups/" + id + "/" }

func manifestPath(id string) string { return backupDir(id) + "manifest.json" }

// idLayout is a backup id: when it started, in UTC.
const idLayout = "20060102T150405Z"

// maxManifest bounds a manifest read: 300,000 files take about 60 MB.
const maxManifest = 1 << 30

// readManifest reads backup id's manifest; blob.ErrNotFound when it has
// none (it does not exist, or is not complete).
func readManifest(ctx context.Context, t Target, id string) (*Manifest, error) {
	f, _, err := t.Open(ctx, manifestPath(id))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(ctxReader{ctx, f}, maxManifest))
	if err != nil {
		return nil, err
	}
	m := &Manifest{}
	if err := json.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("backup %s: manifest: %w", id, err)
	}
	if m.Format != Format {
		return nil, fmt.Errorf("backup %s: manifest format %d, this lightbox reads %d", id, m.Format, Format)
	}
	return m, nil
}

func writeManifest(ctx context.Context, t Target, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	_, err = t.Put(ctx, manifestPath(m.ID), bytes.NewReader(b), int64(len(b)), "")
	return err
}

// Listing is what a target holds: its complete backups, oldest first,
// and the ids of those begun and never completed (a backup stopped
// midway, or one running now).
type Listing struct {
	Complete   []*Manifest
	Incomplete []string
}

// List reads every backup in t.
func List(ctx context.Context, t Target) (*Listing, error) {
	complete, incomplete, err := ids(ctx, t)
	if err != nil {
		return nil, err
	}
	out := &Listing{Incomplete: incomplete}
	for _, id := range complete {
		m, err := readManifest(ctx, t, id)
		if err != nil {
			return nil, targetError(t, err)
		}
		out.Complete = append(out.Complete, m)
	}
	return out, nil
}

// ids lists the backups in t, oldest first: those with a manifest, and
// those without.
func ids(ctx context.Context, t Target) (complete, incomplete []string, err error) {
	seen := map[string]bool{} // id → has a manifest
	err = t.List(ctx, "backups/", func(i blob.Info) error {
		id, name, ok := strings.Cut(strings.TrimPrefix(i.Key, "backups/"), "/")
		if ok {
			seen[id] = seen[id] || name == "manifest.json"
		}
		return nil
	})
	if err != nil {
		return nil, nil, targetError(t, err)
	}
	for id, done := range seen {
		if done {
			complete = append(complete, id)
		} else {
			incomplete = append(incomplete, id)
		}
	}
	slices.SortFunc(complete, compareIDs)
	slices.SortFunc(incomplete, compareIDs)
	return complete, incomplete, nil
}

// compareIDs orders backup ids by when they started, then by the number
// that tells apart those started in the same second.
func compareIDs(a, b string) int {
	ab, an, _ := strings.Cut(a, "-")
	bb, bn, _ := strings.Cut(b, "-")
	if c := strings.Compare(ab, bb); c != 0 {
		return c
	}
	na, _ := strconv.Atoi(an)
	nb, _ := strconv.Atoi(bn)
	return na - nb
}

// ErrNoBackup is a target without the complete backup asked for.
var ErrNoBackup = errors.New("no complete backup")

// Find returns backup id's manifest, or the newest complete backup's when
// id is empty.
func Find(ctx context.Context, t Target, id string) (*Manifest, error) {
	if id == "" {
		complete, _, err := ids(ctx, t)
		if err != nil {
			return nil, err
		}
		if len(complete) == 0 {
			return nil, fmt.Errorf("%w in %s", ErrNoBackup, t)
		}
		id = complete[len(complete)-1]
	}
	if path.Base(id) != id || strings.ContainsAny(id, `\`) || id == "." || id == ".." {
		return nil, fmt.Errorf("%q is not a backup id", id)
	}
	m, err := readManifest(ctx, t, id)
	if errors.Is(err, blob.ErrNotFound) {
		return nil, fmt.Errorf("%w %s in %s (an incomplete backup has no manifest)", ErrNoBackup, id, t)
	}
	if err != nil {
		return nil, targetError(t, err)
	}
	return m, nil
}
