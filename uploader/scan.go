package uploader

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"lightbox/imaging/formats"
)

// file is one original to send.
type file struct {
	path string // as found, for people
	name string // the base name the server records
	size int64
	sum  string // lowercase hex SHA-256, once hashed
	// sidecar is the XMP sidecar beside it, sent once it is uploaded.
	sidecar *sidecar
}

// scan lists the files under paths whose extension names a format the
// service accepts, in path order; ignored are the other files found in
// folders. A path that cannot be read is an error: the run would otherwise
// silently leave out what the caller asked for.
func scan(paths []string) (files []*file, ignored []string, err error) {
	seen := map[string]bool{}
	add := func(path string, info fs.FileInfo) {
		if !info.Mode().IsRegular() {
			return
		}
		if abs, err := filepath.Abs(path); err == nil {
			if seen[abs] {
				return
			}
			seen[abs] = true
		}
		if formats.FromExt(path) == "" {
			ignored = append(ignored, path)
			return
		}
		files = append(files, &file{path: path, name: filepath.Base(path), size: info.Size()})
	}
	for _, root := range paths {
		info, err := os.Stat(root)
		if err != nil {
			return nil, nil, err
		}
		if !info.IsDir() {
			add(root, info)
			continue
		}
		err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			if info.Mode()&fs.ModeSymlink != 0 {
				// A link to a photo is sent as the photo, as it is when
				// named on the command line; a link that leads nowhere is
				// ignored, and said so. Links to folders are not followed.
				if info, err = os.Stat(path); err != nil {
					ignored = append(ignored, path)
					return nil
				}
			}
			add(path, info)
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	sort.SliceStable(files, func(i, j int) bool { return files[i].path < files[j].path })
	return files, ignored, nil
}

// hashAll hashes files with n readers and sends each to out as it is done,
// in any order; a file that cannot be read goes to failed. out is closed at
// the end.
func hashAll(ctx context.Context, files []*file, n int, out chan<- *file, failed func(*file, error)) {
	defer close(out)
	next := make(chan *file)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for f := range next {
				sum, size, err := hashFile(f.path)
				switch {
				case err != nil:
					failed(f, err)
					continue
				case size != f.size:
					failed(f, fmt.Errorf("the file changed while it was read (%d bytes, then %d)", f.size, size))
					continue
				}
				f.sum = sum
				select {
				case out <- f:
				case <-ctx.Done():
				}
			}
		})
	}
	for _, f := range files {
		select {
		case next <- f:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(next)
	wg.Wait()
}

func hashFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", n, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
