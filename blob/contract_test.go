package blob_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"maps"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"lightbox/blob"
	"lightbox/testsupport/testenv"
)

// backends runs f against every backend, each on its own empty store;
// afterwards the disk holds no temporary file.
func backends(t *testing.T, f func(t *testing.T, st blob.Store)) {
	t.Run("disk", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		d, err := blob.NewDisk(root)
		if err != nil {
			t.Fatal(err)
		}
		f(t, d)
		if !t.Failed() {
			assertNoTempFiles(t, root)
		}
	})
	t.Run("s3", func(t *testing.T) {
		t.Parallel()
		f(t, newS3(t))
	})
}

func newS3(t *testing.T) *blob.S3 {
	s, err := blob.NewS3(testenv.S3(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStoreContract(t *testing.T) {
	backends(t, func(t *testing.T, st blob.Store) {
		ctx := context.Background()
		// Larger than one multipart part, and small: both ways up.
		for _, size := range []int{5, 20<<20 + 3} {
			data := bytes.Repeat([]byte("lightbox"), size/8+1)[:size]
			sum := sha256.Sum256(data)
			want := hex.EncodeToString(sum[:])
			info, err := st.Put(ctx, "originals/p/a", bytes.NewReader(data), int64(size))
			if err != nil || info.Size != int64(size) || info.SHA256 != want {
				t.Fatalf("put %d: %+v %v", size, info, err)
			}
			if st, err := st.Stat(ctx, "originals/p/a"); err != nil || st.SHA256 != want || st.Size != int64(size) {
				t.Fatalf("stat %d: %+v %v", size, st, err)
			}
			f, oi, err := st.Open(ctx, "originals/p/a")
			if err != nil || oi.Size != int64(size) {
				t.Fatalf("open: %+v %v", oi, err)
			}
			got, _ := io.ReadAll(f)
			f.Close()
			if !bytes.Equal(got, data) {
				t.Fatal("read back differs")
			}
		}
		if err := st.Delete(ctx, "originals/p/a"); err != nil {
			t.Fatal(err)
		}
		if err := st.Delete(ctx, "originals/p/a"); err != nil {
			t.Fatalf("second delete: %v", err)
		}
		if _, err := st.Stat(ctx, "originals/p/a"); !errors.Is(err, blob.ErrNotFound) {
			t.Fatalf("stat after delete: %v", err)
		}
		if _, _, err := st.Open(ctx, "originals/p/a"); !errors.Is(err, blob.ErrNotFound) {
			t.Fatalf("open after delete: %v", err)
		}

		if _, err := st.Put(ctx, "k/exact", strings.NewReader("12345"), 5); err != nil {
			t.Fatalf("exactly the limit: %v", err)
		}
		if _, err := st.Put(ctx, "k/over", strings.NewReader("123456"), 5); !errors.Is(err, blob.ErrTooLarge) {
			t.Fatalf("over the limit: %v", err)
		}
		big := bytes.Repeat([]byte{1}, 17<<20)
		if _, err := st.Put(ctx, "k/over", bytes.NewReader(big), 17<<20-1); !errors.Is(err, blob.ErrTooLarge) {
			t.Fatalf("over a large limit: %v", err)
		}
		if _, err := st.Stat(ctx, "k/over"); !errors.Is(err, blob.ErrNotFound) {
			t.Fatalf("an over-limit put left an object: %v", err)
		}
		if _, err := st.Put(ctx, "../x", strings.NewReader("x"), 5); !errors.Is(err, blob.ErrBadKey) {
			t.Fatalf("bad key: %v", err)
		}

		w, err := st.Create(ctx, "exports/e/aborted.zip")
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte("half"))
		w.Abort()
		if _, err := st.Stat(ctx, "exports/e/aborted.zip"); !errors.Is(err, blob.ErrNotFound) {
			t.Fatalf("an aborted write is visible: %v", err)
		}
		w, _ = st.Create(ctx, "exports/e/archive.zip")
		w.Write([]byte("zip "))
		if err := w.Sync(); err != nil {
			t.Fatalf("sync: %v", err)
		}
		w.Write([]byte("bytes")) // after Sync: Commit keeps these too
		written := w.Written()
		if _, err := st.Stat(ctx, "exports/e/archive.zip"); !errors.Is(err, blob.ErrNotFound) {
			t.Fatalf("visible before commit: %v", err)
		}
		info, err := w.Commit()
		if err != nil || info.Size != 9 || written.Size != 9 || info.SHA256 != written.SHA256 {
			t.Fatalf("commit %+v %v; written before %+v", info, err, written)
		}
		if err := w.Abort(); err != nil {
			t.Fatalf("abort after commit: %v", err)
		}
		if st, err := st.Stat(ctx, "exports/e/archive.zip"); err != nil || st.SHA256 != info.SHA256 {
			t.Fatalf("stat after commit %+v %v", st, err)
		}
	})
}

// TestRemoveStaleLeavesFreshWrites: a write in progress is what a dead
// process leaves; only an old one is removed.
func TestRemoveStaleLeavesFreshWrites(t *testing.T) {
	backends(t, func(t *testing.T, st blob.Store) {
		ctx := context.Background()
		w, err := st.Create(ctx, "exports/e/a.zip")
		if err != nil {
			t.Fatal(err)
		}
		w.Write(bytes.Repeat([]byte{1}, 1<<20))
		defer w.Abort()
		r := st.(blob.StaleRemover)
		if n, err := r.RemoveStale(ctx, time.Hour); err != nil || n != 0 {
			t.Fatalf("removed %d fresh, %v", n, err)
		}
		testenv.Eventually(t, "the write in progress to be seen as stale", 5*time.Minute, func() bool {
			n, err := r.RemoveStale(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			return n == 1
		})
	})
}

// TestS3PresignedURLs moves bytes as a browser does: a PUT bound to its
// type and size, then a GET.
func TestS3PresignedURLs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newS3(t)
	data := []byte("not really a jpeg, but bytes")
	put, err := s.SignPut(ctx, blob.Grant{Key: "originals/p/a", Expires: time.Now().Add(time.Minute), MaxSize: int64(len(data)), ContentType: "image/jpeg"})
	if err != nil {
		t.Fatal(err)
	}
	send := func(body []byte, header map[string]string) (int, error) { return testenv.Put(put.URL, header, body) }
	if code, err := send(append(data, "and more"...), put.Headers); err == nil && code/100 == 2 {
		t.Error("the bucket took more bytes than declared")
	}
	other := map[string]string{"Content-Type": "image/png"}
	if code, err := send(data, other); err == nil && code/100 == 2 {
		t.Error("the bucket took another content type")
	}
	if _, err := s.Stat(ctx, "originals/p/a"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("a refused PUT left an object: %v", err)
	}
	if code, err := send(data, put.Headers); err != nil || code != http.StatusOK {
		t.Fatalf("PUT answered %d %v", code, err)
	}
	// The URL takes one PUT: bytes once there are not replaced.
	other = maps.Clone(put.Headers)
	delete(other, "If-None-Match")
	for _, h := range []map[string]string{put.Headers, other} {
		if code, err := send(bytes.ToUpper(data), h); err == nil && code/100 == 2 {
			t.Errorf("a second PUT (headers %v) replaced the object: %d", h, code)
		} else if err == nil && h["If-None-Match"] != "" && code != http.StatusPreconditionFailed {
			t.Errorf("a second PUT answered %d, want 412", code)
		}
	}
	info, err := s.Stat(ctx, "originals/p/a")
	if sum := sha256.Sum256(data); err != nil || info.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("stat %+v %v", info, err)
	}

	get, err := s.SignGet(ctx, blob.Grant{Key: "originals/p/a", Expires: time.Now().Add(time.Minute), ContentType: "image/jpeg"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(get.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, data) || resp.Header.Get("Content-Type") != "image/jpeg" {
		t.Fatalf("GET %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}

	expired, _ := s.SignPut(ctx, blob.Grant{Key: "originals/p/b", Expires: time.Now().Add(time.Second), MaxSize: 4, ContentType: "image/jpeg"})
	time.Sleep(2 * time.Second)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, expired.URL, strings.NewReader("abcd"))
	req.Header.Set("Content-Type", "image/jpeg")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("an expired URL: %v %v", statusOf(resp), err)
	}
}

// TestS3PublicEndpoint: URLs lead where browsers reach the service, and
// the service takes them there.
func TestS3PublicEndpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := testenv.S3(t)
	cfg.PublicEndpoint = strings.Replace(cfg.Endpoint, "127.0.0.1", "localhost", 1)
	s, err := blob.NewS3(cfg)
	if err != nil {
		t.Fatal(err)
	}
	put, err := s.SignPut(ctx, blob.Grant{Key: "originals/p/a", Expires: time.Now().Add(time.Minute), MaxSize: 3, ContentType: "image/png"})
	if err != nil || !strings.HasPrefix(put.URL, cfg.PublicEndpoint+"/") {
		t.Fatalf("%+v %v", put, err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, put.URL, strings.NewReader("png"))
	for k, v := range put.Headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT: %v %v", statusOf(resp), err)
	}
	resp.Body.Close()
	if info, err := s.Stat(ctx, "originals/p/a"); err != nil || info.Size != 3 {
		t.Fatalf("stat %+v %v", info, err)
	}
}

// statusOf is a response's status line, or "no response".
func statusOf(resp *http.Response) string {
	if resp == nil {
		return "no response"
	}
	return resp.Status
}

// List names every object with its size and time of writing, and leaves
// out a write still in progress.
func TestListNamesEveryObject(t *testing.T) {
	backends(t, func(t *testing.T, st blob.Store) {
		ctx := context.Background()
		before := time.Now().Add(-time.Minute)
		want := map[string]int64{"originals/p/a": 3, "derived/a/thumbnail.jpg": 5, "exports/e/r/x.zip": 0}
		for key, n := range want {
			if _, err := st.Put(ctx, key, bytes.NewReader(bytes.Repeat([]byte{7}, int(n))), 1<<20); err != nil {
				t.Fatal(err)
			}
		}
		w, err := st.Create(ctx, "exports/e/s/y.zip")
		if err != nil {
			t.Fatal(err)
		}
		defer w.Abort()
		w.Write([]byte("in progress"))
		got := map[string]int64{}
		err = st.(blob.Lister).List(ctx, func(i blob.Info) error {
			if i.ModTime.Before(before) || i.ModTime.After(time.Now().Add(time.Minute)) {
				t.Errorf("%s written at %v, not about now", i.Key, i.ModTime)
			}
			got[i.Key] = i.Size
			return nil
		})
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("listed %v, %v; want %v", got, err, want)
		}
		stop := errors.New("stop")
		n := 0
		if err := st.(blob.Lister).List(ctx, func(blob.Info) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
			t.Fatalf("a listing fn stopped: %d calls, %v", n, err)
		}
	})
}
