package faults_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"lightbox/store"
	"lightbox/testsupport/testenv"
)

// patience bounds every wait for a state. It only catches a hang: the
// suite runs real processes on two busy cores, and Asynq gives a killed
// worker's tasks back only after their lease (30 s) and its cutoff (30 s)
// have passed, on a recoverer that looks once a minute.
const patience = 12 * time.Minute

// httpClient times out so a killed server fails a call rather than
// hanging it.
var httpClient = &http.Client{Timeout: time.Minute}

// photo is one distinct file to upload.
type photo struct {
	Name string
	Data []byte
	Sum  string
}

// photos returns n distinct photos, cycling through the corpus's smaller
// ones with a random tail added, so none is a duplicate of another.
func photos(t testing.TB, n int) []photo {
	t.Helper()
	dir := filepath.Join(testenv.Corpus(t), "photos")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	type file struct {
		name string
		data []byte
	}
	var files []file
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) <= 1<<20 {
			files = append(files, file{e.Name(), b})
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	out := make([]photo, n)
	for i := range out {
		f := files[i%len(files)]
		tag := make([]byte, 16)
		rand.Read(tag)
		data := append(append([]byte(nil), f.data...), hex.EncodeToString(tag)...)
		sum := sha256.Sum256(data)
		out[i] = photo{Name: fmt.Sprintf("%03d-%s", i+1, f.name), Data: data, Sum: hex.EncodeToString(sum[:])}
	}
	return out
}

// user records a user with an API key and a project of theirs.
func user(t testing.TB, st *store.Store) (key, project string) {
	t.Helper()
	ctx := context.Background()
	u, err := st.CreateUser(ctx, fmt.Sprintf("u%d@example.org", time.Now().UnixNano()), false)
	if err != nil {
		t.Fatal(err)
	}
	key, _, err = st.CreateAPIKey(ctx, u.ID, "faults")
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.CreateProject(ctx, u.ID, "Faults", "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return key, p.ID.String()
}

// call sends one API request to base and decodes a JSON answer.
func call(base, method, path, key string, body, into any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := httpClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		return res.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, b)
	}
	if into != nil {
		return res.StatusCode, json.Unmarshal(b, into)
	}
	return res.StatusCode, nil
}

// upload takes one photo through prepare, PUT and finalize on base, as a
// client does, and returns the asset's id.
func upload(base, key, project string, p photo) (string, error) {
	var prep struct {
		Uploads []struct {
			AssetID   string            `json:"assetId"`
			UploadURL string            `json:"uploadUrl"`
			Headers   map[string]string `json:"headers"`
		} `json:"uploads"`
	}
	files := []map[string]any{{"filename": p.Name, "byteSize": len(p.Data), "contentType": "image/jpeg"}}
	if _, err := call(base, "POST", "/v1/projects/"+project+"/assets:prepareUpload", key, map[string]any{"files": files}, &prep); err != nil {
		return "", err
	}
	u := prep.Uploads[0]
	req, _ := http.NewRequest(http.MethodPut, u.UploadURL, bytes.NewReader(p.Data))
	for k, v := range u.Headers {
		req.Header.Set(k, v)
	}
	res, err := httpClient.Do(req)
	if err != nil {
		return "", err
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode/100 != 2 {
		return "", fmt.Errorf("PUT %s: %d", p.Name, res.StatusCode)
	}
	assets := []map[string]any{{"assetId": u.AssetID, "checksumSha256": p.Sum}}
	if _, err := call(base, "POST", "/v1/projects/"+project+"/assets:finalizeUpload", key, map[string]any{"assets": assets}, nil); err != nil {
		return "", err
	}
	return u.AssetID, nil
}

// uploadAll uploads every photo, four at a time, each through the first
// of bases that takes it: a client whose server fails prepares again
// through the next one. It returns the asset ids and how many uploads
// needed another try. Upload i starts at bases[i%len(bases)].
func uploadAll(bases []string, key, project string, ps []photo) (ids []string, retried int, err error) {
	ids = make([]string, len(ps))
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	deadline := time.Now().Add(patience)
	for i, p := range ps {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			for try := 0; ; try++ {
				id, err := upload(bases[(i+try)%len(bases)], key, project, p)
				if err == nil {
					mu.Lock()
					ids[i] = id
					if try > 0 {
						retried++
					}
					mu.Unlock()
					return
				}
				if time.Now().After(deadline) {
					mu.Lock()
					errs = append(errs, fmt.Errorf("upload %s: still failing after %v: %w", p.Name, patience, err))
					mu.Unlock()
					return
				}
				time.Sleep(500 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	return ids, retried, errors.Join(errs...)
}

// stream follows a project's SSE stream on base and keeps the ids of the
// assets its asset.updated events name.
type stream struct {
	mu     sync.Mutex
	assets map[string]bool
	events int
}

func watch(t testing.TB, base, key, project string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/realtime?projectId="+project, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if res.StatusCode != 200 {
		cancel()
		t.Fatalf("realtime: %d", res.StatusCode)
	}
	s := &stream{assets: map[string]bool{}}
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); res.Body.Close(); <-done })
	go func() {
		defer close(done)
		sc := bufio.NewScanner(res.Body)
		name := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event:"):
				name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
			case strings.HasPrefix(line, "data:") && name == "asset.updated":
				var d struct {
					AssetID string `json:"assetId"`
				}
				json.Unmarshal([]byte(strings.TrimPrefix(line, "data:")), &d)
				s.mu.Lock()
				s.assets[d.AssetID] = true
				s.events++
				s.mu.Unlock()
			}
		}
	}()
	return s
}

// saw reports whether the stream named every one of ids.
func (s *stream) saw(ids []string) (missing int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if !s.assets[id] {
			missing++
		}
	}
	return missing
}

// readFiles reads an asset's thumbnail and preview through base: the list
// from the API, the bytes from the signed URLs it gives.
func readFiles(base, key, asset string) error {
	var files struct {
		Files []struct {
			Kind     string `json:"kind"`
			URL      string `json:"url"`
			ByteSize int64  `json:"byteSize"`
		} `json:"files"`
	}
	if _, err := call(base, "GET", "/v1/assets/"+asset+"/files", key, nil, &files); err != nil {
		return err
	}
	kinds := map[string]bool{}
	for _, f := range files.Files {
		res, err := httpClient.Get(f.URL)
		if err != nil {
			return err
		}
		n, _ := io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || n != f.ByteSize {
			return fmt.Errorf("asset %s %s: %d, %d bytes of %d", asset, f.Kind, res.StatusCode, n, f.ByteSize)
		}
		kinds[f.Kind] = true
	}
	if !kinds["thumbnail"] || !kinds["preview"] {
		return fmt.Errorf("asset %s has files %v, want a thumbnail and a preview", asset, kinds)
	}
	return nil
}
