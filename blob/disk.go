package blob

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Disk stores objects as files below a root folder. Writes go to a
// temporary file in the same folder, are fsynced, then renamed into place,
// so a crash never leaves a partial object at a key.
type Disk struct {
	root string
}

// NewDisk makes root if needed and returns a Disk store on it.
func NewDisk(root string) (*Disk, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	return &Disk{root: abs}, nil
}

func (d *Disk) path(key string) (string, error) {
	if err := CheckKey(key); err != nil {
		return "", err
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

// Put implements Store.
func (d *Disk) Put(ctx context.Context, key string, r io.Reader, limit int64) (Info, error) {
	w, err := d.Create(ctx, key)
	if err != nil {
		return Info{}, err
	}
	defer w.Abort()
	// Read one byte past the limit to tell "exactly limit" from "more".
	n, err := io.Copy(w, io.LimitReader(contextReader{ctx, r}, limit+1))
	if err != nil {
		return Info{}, err
	}
	if n > limit {
		return Info{}, ErrTooLarge
	}
	return w.Commit()
}

// Create implements Store.
func (d *Disk) Create(ctx context.Context, key string) (Writer, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".upload-*")
	if err != nil {
		return nil, full(err)
	}
	return &diskWriter{f: f, final: p, key: key, h: sha256.New()}, nil
}

type diskWriter struct {
	f     *os.File
	final string
	key   string
	h     hash.Hash
	n     int64
	done  bool
	// synced is whether Sync made every byte written durable.
	synced bool
}

func (w *diskWriter) Write(b []byte) (int, error) {
	w.synced = false
	n, err := w.f.Write(b)
	w.h.Write(b[:n])
	w.n += int64(n)
	return n, full(err)
}

func (w *diskWriter) Written() Info {
	return Info{Key: w.key, Size: w.n, SHA256: hex.EncodeToString(w.h.Sum(nil))}
}

func (w *diskWriter) Sync() error {
	err := w.f.Sync()
	w.synced = err == nil
	return full(err)
}

func (w *diskWriter) Commit() (Info, error) {
	if w.done {
		return Info{}, errors.New("blob: writer already closed")
	}
	w.done = true
	if !w.synced {
		if err := w.f.Sync(); err != nil {
			w.f.Close()
			os.Remove(w.f.Name())
			return Info{}, full(err)
		}
	}
	if err := w.f.Close(); err != nil {
		os.Remove(w.f.Name())
		return Info{}, full(err)
	}
	if err := os.Rename(w.f.Name(), w.final); err != nil {
		os.Remove(w.f.Name())
		return Info{}, err
	}
	// The rename is durable only once the folder is synced too.
	if dir, err := os.Open(filepath.Dir(w.final)); err == nil {
		dir.Sync()
		dir.Close()
	}
	st, err := os.Stat(w.final)
	if err != nil {
		return Info{}, err
	}
	info := w.Written()
	info.ModTime = st.ModTime()
	return info, nil
}

func (w *diskWriter) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	w.f.Close()
	return os.Remove(w.f.Name())
}

// full marks a write the disk refused for want of space as ErrFull.
func full(err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("%w: %w", ErrFull, err)
	}
	return err
}

// Stat implements Store. It reads the object to give its checksum.
func (d *Disk) Stat(ctx context.Context, key string) (Info, error) {
	f, info, err := d.Open(ctx, key)
	if err != nil {
		return Info{}, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, contextReader{ctx, f}); err != nil {
		return Info{}, err
	}
	info.SHA256 = hex.EncodeToString(h.Sum(nil))
	return info, nil
}

// Open implements Store. The Info it returns has no checksum.
func (d *Disk) Open(_ context.Context, key string) (io.ReadSeekCloser, Info, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, Info{}, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Info{}, fmt.Errorf("%s: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, Info{}, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, Info{}, err
	}
	return f, Info{Key: key, Size: st.Size(), ModTime: st.ModTime()}, nil
}

// Delete implements Store.
func (d *Disk) Delete(_ context.Context, key string) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Ping implements Pinger: the root folder is there.
func (d *Disk) Ping(context.Context) error {
	st, err := os.Stat(d.root)
	if err == nil && !st.IsDir() {
		err = fmt.Errorf("%s is not a folder", d.root)
	}
	return err
}

// contextReader stops a long copy when its context ends.
type contextReader struct {
	ctx context.Context
	r   io.Reader
}

func (c contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// List implements Lister, in key order.
func (d *Disk) List(ctx context.Context, fn func(Info) error) error {
	return d.ListPrefix(ctx, "", fn)
}

// ListPrefix is List of the keys that start with prefix, in key order. It
// walks only the folder the prefix's last "/" names; none is no key.
func (d *Disk) ListPrefix(ctx context.Context, prefix string, fn func(Info) error) error {
	dir := d.root
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		dir = filepath.Join(d.root, filepath.FromSlash(prefix[:i]))
	}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".upload-") {
			return nil
		}
		rel, err := filepath.Rel(d.root, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if !strings.HasPrefix(key, prefix) || CheckKey(key) != nil {
			return nil
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted meanwhile
		} else if err != nil {
			return err
		}
		return fn(Info{Key: key, Size: info.Size(), ModTime: info.ModTime()})
	})
	if prefix != "" && errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// RemoveStale implements StaleRemover: it deletes temporary files older
// than age, what a process killed in the middle of a write leaves behind.
func (d *Disk) RemoveStale(ctx context.Context, age time.Duration) (int, error) {
	cutoff := time.Now().Add(-age)
	n := 0
	err := filepath.WalkDir(d.root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || ctx.Err() != nil {
			return ctx.Err()
		}
		if e.IsDir() || !strings.HasPrefix(e.Name(), ".upload-") {
			return nil
		}
		if info, err := e.Info(); err == nil && info.ModTime().Before(cutoff) {
			if os.Remove(p) == nil {
				n++
			}
		}
		return nil
	})
	return n, err
}
