package backup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"lightbox/blob"
)

// Problem is a file of a backup that is not as its manifest says.
type Problem struct {
	Path    string `json:"path"`
	Problem string `json:"problem"`
}

// VerifyReport says what Verify read.
type VerifyReport struct {
	Manifest *Manifest
	// Files and Bytes count what was read and hashed: the backup's own
	// files and each distinct blob once.
	Files    int
	Bytes    int64
	Problems []Problem
}

// ErrDamaged is a backup whose files are not those its manifest lists.
var ErrDamaged = errors.New("the backup is damaged")

// Verify reads backup id (the newest when empty) whole and checks every
// file's size and SHA-256 against its manifest. A damaged backup is
// ErrDamaged, with what is wrong in the report; an error reading the
// target is returned as such.
func Verify(ctx context.Context, t Target, id string, conc int) (*VerifyReport, error) {
	m, err := Find(ctx, t, id)
	if err != nil {
		return nil, err
	}
	files := []File{m.Database}
	for _, f := range []*File{m.Ledger, m.Secrets} {
		if f != nil {
			files = append(files, *f)
		}
	}
	seen := map[string]bool{}
	for _, b := range m.Blobs {
		if !seen[b.SHA256] {
			seen[b.SHA256] = true
			files = append(files, File{Path: BlobPath(b.SHA256), Size: b.Size, SHA256: b.SHA256})
		}
	}
	rep := &VerifyReport{Manifest: m}
	var mu sync.Mutex
	err = parallel(ctx, len(files), max(conc, 1), func(ctx context.Context, i int) error {
		f := files[i]
		got, err := hashObject(ctx, t, f.Path)
		problem := ""
		switch {
		case errors.Is(err, blob.ErrNotFound):
			problem = "missing"
		case err != nil:
			return targetError(t, err)
		case got.Size != f.Size || got.SHA256 != f.SHA256:
			problem = fmt.Sprintf("holds %d bytes with SHA-256 %s, the manifest says %d with %s", got.Size, got.SHA256, f.Size, f.SHA256)
		}
		mu.Lock()
		defer mu.Unlock()
		rep.Files++
		rep.Bytes += got.Size
		if problem != "" {
			rep.Problems = append(rep.Problems, Problem{Path: f.Path, Problem: problem})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(rep.Problems, func(a, b Problem) int { return strings.Compare(a.Path, b.Path) })
	if len(rep.Problems) > 0 {
		return rep, fmt.Errorf("%w: %d of its %d files are not as its manifest says", ErrDamaged, len(rep.Problems), len(files))
	}
	return rep, nil
}

// hashObject reads key whole.
func hashObject(ctx context.Context, t Target, key string) (blob.Info, error) {
	f, _, err := t.Open(ctx, key)
	if err != nil {
		return blob.Info{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, ctxReader{ctx, f})
	if err != nil {
		return blob.Info{}, err
	}
	return blob.Info{Key: key, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}
