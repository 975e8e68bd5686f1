package e2e_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"lightbox/blob"
	"lightbox/testsupport/testenv"

	"github.com/chromedp/chromedp"
)

// s3Stack is a stack whose blobs live in the test's own bucket on the
// local S3 server, with the shared secrets given as settings.
func s3Stack(t *testing.T) (*stack, blob.S3Config) {
	t.Helper()
	bucket := testenv.S3(t)
	_, key, _ := ed25519.GenerateKey(nil)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(artifacts, "stack-s3.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	s := startStack(t, logFile, map[string]string{
		"BLOB_BACKEND": "s3", "S3_ENDPOINT": bucket.Endpoint, "S3_REGION": bucket.Region, "S3_BUCKET": bucket.Bucket,
		"S3_ACCESS_KEY_ID": bucket.AccessKeyID, "S3_SECRET_ACCESS_KEY": bucket.SecretAccessKey, "S3_FORCE_PATH_STYLE": "true",
		"CHAIN_KEY": base64.StdEncoding.EncodeToString(der),
	})
	return s, bucket
}

// TestUploadThroughS3 takes files through prepare, a PUT straight to the
// bucket and finalize, as a browser does; a worker makes the derived
// files, which are read back through presigned URLs. Beside it: a wrong
// checksum, an upload that never came, and a body larger than declared.
func TestUploadThroughS3(t *testing.T) {
	t.Parallel()
	s, bucket := s3Stack(t)
	key := s.user("sam@example.org", false)
	project := s.createProject(key, "Bucket")
	photos := distinctPhotos(t, 4)
	datas := make([][]byte, len(photos))
	files := make([]map[string]any, len(photos))
	for i, path := range photos {
		datas[i], _ = os.ReadFile(path)
		files[i] = map[string]any{"filename": filepath.Base(path), "byteSize": len(datas[i])}
	}
	uploads := s.prepare(key, project, files)
	put := func(i int, body []byte) (int, error) {
		return testenv.Put(uploads[i].UploadURL, uploads[i].Headers, body)
	}
	if u := uploads[0]; u.Headers["Content-Length"] != strconv.Itoa(len(datas[0])) || u.Headers["Content-Type"] != "image/jpeg" {
		t.Fatalf("the upload URL does not bind type and size: %+v", u.Headers)
	}
	// 0 arrives whole; 1 arrives but is finalized with another checksum;
	// 2 never arrives; 3 is refused for being larger than declared.
	for i := range 2 {
		if code, err := put(i, datas[i]); err != nil || code != http.StatusOK {
			t.Fatalf("PUT to the bucket: %d %v", code, err)
		}
	}
	if code, err := put(3, append(datas[3], "more than declared"...)); err == nil && code/100 == 2 {
		t.Fatalf("the bucket took a body larger than declared: %d", code)
	}
	assets := make([]map[string]any, len(photos))
	for i, d := range datas {
		sum := sha256.Sum256(d)
		if i == 1 {
			sum = sha256.Sum256([]byte("other bytes"))
		}
		assets[i] = map[string]any{"assetId": uploads[i].AssetID, "checksumSha256": hex.EncodeToString(sum[:])}
	}
	var fin struct {
		Assets []struct {
			Status string `json:"status"`
			Error  *struct {
				Code string `json:"code"`
			} `json:"error"`
		} `json:"assets"`
	}
	if code := s.call("POST", "/v1/projects/"+project+"/assets:finalizeUpload", key, map[string]any{"assets": assets}, &fin); code != 200 {
		t.Fatalf("finalize: %d", code)
	}
	want := []struct{ status, code string }{{"uploaded", ""}, {"failed", "checksum_mismatch"}, {"pending_upload", "upload_missing"}, {"pending_upload", "upload_missing"}}
	for i, w := range want {
		got := fin.Assets[i]
		if code := ""; got.Status != w.status || (got.Error != nil) != (w.code != "") || (got.Error != nil && got.Error.Code != w.code) {
			if got.Error != nil {
				code = got.Error.Code
			}
			t.Errorf("asset %d: %s %s, want %s %s", i, got.Status, code, w.status, w.code)
		}
	}

	var stats struct {
		Ready int `json:"ready"`
	}
	testenv.EventuallyEvery(s.t, "the uploaded asset to be ready", pipelinePatience, time.Second, func() bool {
		s.apiGet(key, "/v1/projects/"+project+"/stats", &stats)
		return stats.Ready == 1
	})
	if n := s.readFilesFromBucket(key, uploads[0].AssetID, bucket); n == 0 {
		t.Fatal("the ready asset lists no files")
	}
	st, err := blob.NewS3(bucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Stat(context.Background(), "originals/"+project+"/"+uploads[1].AssetID); err == nil {
		t.Error("the original of a checksum mismatch was kept")
	}
}

// TestUploadToS3InABrowser: the web uploader PUTs straight to the bucket,
// across origins, with the headers prepare lists.
func TestUploadToS3InABrowser(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	s, _ := s3Stack(t)
	key := s.user("kim@example.org", false)
	b := newBrowser(t, chrome)
	project := b.newProject(s.url, key, "Bucket")
	b.run("choose 5 photos", chromedp.SetUploadFiles(chromedp.CSS("#file-input"), distinctPhotos(t, 5)))
	s.waitReady(key, project, 5)
}

// createProject makes a project through the API and returns its id.
func (s *stack) createProject(key, title string) string {
	s.t.Helper()
	var p struct {
		ID string `json:"id"`
	}
	if code := s.call("POST", "/v1/projects", key, map[string]any{"title": title}, &p); code != http.StatusCreated {
		s.t.Fatalf("create project: %d", code)
	}
	return p.ID
}

// readFilesFromBucket reads every file the API lists for asset through
// its URL, which must lead into bucket, and checks its type and checksum.
// It returns how many files were listed.
func (s *stack) readFilesFromBucket(key, asset string, bucket blob.S3Config) int {
	s.t.Helper()
	var out struct {
		Files []struct {
			Kind           string `json:"kind"`
			URL            string `json:"url"`
			ContentType    string `json:"contentType"`
			ChecksumSHA256 string `json:"checksumSha256"`
		} `json:"files"`
	}
	s.apiGet(key, "/v1/assets/"+asset+"/files", &out)
	for _, f := range out.Files {
		if !strings.HasPrefix(f.URL, bucket.Endpoint+"/"+bucket.Bucket+"/") {
			s.t.Errorf("%s of %s is not a URL into the bucket: %s", f.Kind, asset, f.URL)
		}
		res, err := http.Get(f.URL)
		if err != nil {
			s.t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		sum := sha256.Sum256(body)
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != f.ContentType ||
			(f.ChecksumSHA256 != "" && f.ChecksumSHA256 != hex.EncodeToString(sum[:])) {
			s.t.Errorf("GET %s of %s: %d %s, %d bytes", f.Kind, asset, res.StatusCode, res.Header.Get("Content-Type"), len(body))
		}
	}
	return len(out.Files)
}
