package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lightbox/testsupport/procs"
	"lightbox/testsupport/testenv"
)

// services runs cmd/server and cmd/worker, as built binaries, on the
// test's own Postgres and Redis databases until the test ends, and
// returns the server's URL and an API key of a new user.
func services(t *testing.T) (url, key string) {
	t.Helper()
	env := testenv.New(t)
	u, err := env.Store.CreateUser(context.Background(), "ana@example.org", false)
	if err != nil {
		t.Fatal(err)
	}
	if key, _, err = env.Store.CreateAPIKey(context.Background(), u.ID, "xmp"); err != nil {
		t.Fatal(err)
	}
	stack := procs.NewStack(t, env.DSN, env.RedisURL)
	stack.Shared["CLUSTER_DELAY"] = "1h"
	server := stack.AddServer(nil)
	stack.AddWorker(nil)
	return server.URL, key
}

// api calls the API as the web app does and decodes a 2xx answer.
func api(t *testing.T, url, key, method, path string, in, out any) {
	t.Helper()
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url+path, body)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatal(err)
		}
	}
}

type testAsset struct {
	ID          string         `json:"id"`
	Filename    string         `json:"filename"`
	PairAssetID *string        `json:"pairAssetId"`
	IPTC        map[string]any `json:"iptc"`
	Flags       struct {
		Readiness string `json:"readiness"`
	} `json:"flags"`
	MyRating *struct {
		Rating     *int    `json:"rating"`
		Rejected   bool    `json:"rejected"`
		ColorLabel *string `json:"colorLabel"`
	} `json:"myRating"`
}

func listAssets(t *testing.T, url, key, project string) map[string]testAsset {
	t.Helper()
	var page struct {
		Items []testAsset `json:"items"`
	}
	api(t, url, key, "GET", "/v1/projects/"+project+"/assets?limit=100", nil, &page)
	byName := map[string]testAsset{}
	for _, a := range page.Items {
		byName[a.Filename] = a
	}
	return byName
}

// exifXMP is what exiftool reads of a sidecar's rating and label.
func exifXMP(t *testing.T, path string) (rating, label string) {
	t.Helper()
	out, err := exec.Command("/usr/bin/exiftool", "-j", "-XMP:Rating", "-XMP:Label", path).Output()
	if err != nil {
		t.Fatalf("exiftool %s: %v", path, err)
	}
	var got []map[string]any
	if err := json.Unmarshal(out, &got); err != nil || len(got) != 1 {
		t.Fatalf("exiftool %s printed %s", path, out)
	}
	str := func(v any) string {
		if v == nil {
			return ""
		}
		return fmt.Sprint(v)
	}
	return str(got[0]["Rating"]), str(got[0]["Label"])
}

func copyFile(t *testing.T, from, to string, change func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if change != nil {
		b = change(bytes.Clone(b))
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// xmpFiles lists the sidecars under dir.
func xmpFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(path string, _ os.DirEntry, _ error) error {
		if strings.HasSuffix(path, ".xmp") {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, rel)
		}
		return nil
	})
	return out
}

// xmpStack runs the server and worker (services) and returns their URL,
// an API key, and the CLI built and pointed at them, which fails the test
// when a command does.
func xmpStack(t *testing.T) (url, key string, lightbox func(args ...string) string) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/exiftool"); err != nil {
		t.Skip("exiftool is not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // bounds a hang only
	t.Cleanup(cancel)
	url, key = services(t)
	cmd := testenv.BuildCommand(ctx, t, ".")
	cmd.Env = []string{"LIGHTBOX_URL=" + url, "LIGHTBOX_API_KEY=" + key}
	return url, key, func(args ...string) string {
		t.Helper()
		status, stdout, stderr := cmd.Run(args...)
		if status != 0 {
			t.Fatalf("lightbox %q: status %d, stdout %q, stderr %q", args, status, stdout, stderr)
		}
		return stdout
	}
}

// uploadNew sends dir to a new project called title with lightbox upload
// and returns the project's id.
func uploadNew(t *testing.T, lightbox func(args ...string) string, title, dir string) string {
	t.Helper()
	for _, line := range strings.Split(lightbox("upload", "--json", "--new", title, dir), "\n") {
		var ev struct {
			Event     string `json:"event"`
			ProjectID string `json:"projectId"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Event == "project" {
			return ev.ProjectID
		}
	}
	t.Fatal("the upload named no project")
	return ""
}

// TestXMPWriteAndReadThroughAnEditor uploads four photos, culls them
// through the API, writes their sidecars (merging with one that holds an
// editor's develop setting), reads them with exiftool, changes a rating
// as an editor would, and reads it back into Lightbox.
func TestXMPWriteAndReadThroughAnEditor(t *testing.T) {
	url, key, lightbox := xmpStack(t)

	dir := t.TempDir()
	names := []string{"wood.jpg", "dune.jpg", "storm.jpg", "blinds.jpg"}
	for _, n := range names {
		copyFile(t, photo(t, n), filepath.Join(dir, n), nil)
	}
	project := uploadNew(t, lightbox, "Coast", dir)
	var assets map[string]testAsset
	testenv.EventuallyEvery(t, "the photos to be ingested", 5*time.Minute, time.Second, func() bool {
		assets = listAssets(t, url, key, project)
		for _, n := range names {
			if r := assets[n].Flags.Readiness; r == "" || r == "uploading" || r == "uploaded" {
				return false
			} else if r == "failed" {
				t.Fatalf("%s failed to ingest", n)
			}
		}
		return true
	})
	rate := func(name string, change map[string]any) {
		api(t, url, key, "POST", "/v1/assets/"+assets[name].ID+"/ratings", change, nil)
	}
	rate("wood.jpg", map[string]any{"rating": 3})
	rate("dune.jpg", map[string]any{"rejected": true})
	rate("storm.jpg", map[string]any{"colorLabel": "red"})

	// An editor's own sidecar, which the merge must keep.
	foreign := `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">` +
		`<rdf:Description rdf:about="" xmlns:crs="http://ns.adobe.com/camera-raw-settings/1.0/" crs:Exposure2012="+0.50"/>` +
		`</rdf:RDF></x:xmpmeta>`
	if err := os.WriteFile(filepath.Join(dir, "storm.xmp"), []byte(foreign), 0o644); err != nil {
		t.Fatal(err)
	}
	// Not the photos: the same name and size with other bytes, and the
	// same bytes under another name.
	copyFile(t, photo(t, "dune.jpg"), filepath.Join(dir, "other", "dune.jpg"), func(b []byte) []byte { b[len(b)/2] ^= 0xff; return b })
	copyFile(t, photo(t, "wood.jpg"), filepath.Join(dir, "wood-copy.jpg"), nil)

	out := lightbox("xmp", "write", "--project", project, "--dry-run", dir)
	if got := xmpFiles(t, dir); len(got) != 1 || !strings.Contains(out, "would write") ||
		!strings.Contains(out, "matched 4, would write 4, unchanged 0, not found 0") {
		t.Fatalf("--dry-run left %q and printed:\n%s", got, out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "storm.xmp")); string(b) != foreign {
		t.Fatalf("--dry-run changed storm.xmp:\n%s", b)
	}

	out = lightbox("xmp", "write", "--project", project, dir)
	if !strings.Contains(out, "matched 4, written 4, unchanged 0, not found 0") {
		t.Fatalf("xmp write printed:\n%s", out)
	}
	if got := xmpFiles(t, dir); strings.Join(got, " ") != "blinds.xmp dune.xmp storm.xmp wood.xmp" {
		t.Fatalf("sidecars %q, want one beside each photo and none for the decoys", got)
	}
	for name, want := range map[string][2]string{"wood": {"3", ""}, "dune": {"-1", ""}, "storm": {"", "red"}, "blinds": {"", ""}} {
		rating, label := exifXMP(t, filepath.Join(dir, name+".xmp"))
		if rating != want[0] || !strings.EqualFold(label, want[1]) {
			t.Errorf("%s.xmp: rating %q, label %q; want %q, %q", name, rating, label, want[0], want[1])
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "storm.xmp")); !bytes.Contains(b, []byte("Exposure2012")) || !bytes.Contains(b, []byte("+0.50")) {
		t.Errorf("the merge lost crs:Exposure2012:\n%s", b)
	}
	if out := lightbox("xmp", "write", "--project", project, dir); !strings.Contains(out, "matched 4, written 0, unchanged 4") {
		t.Errorf("writing again printed:\n%s", out)
	}

	// An editor gives wood five stars and a title.
	sidecar := filepath.Join(dir, "wood.xmp")
	if out, err := exec.Command("/usr/bin/exiftool", "-overwrite_original", "-XMP-xmp:Rating=5", "-XMP-dc:Title=Old wood", sidecar).CombinedOutput(); err != nil {
		t.Fatalf("exiftool: %v\n%s", err, out)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(sidecar, later, later); err != nil {
		t.Fatal(err)
	}
	out = lightbox("xmp", "read", "--project", project, dir)
	if !strings.Contains(out, "wood.jpg: rating 3 → 5; title none → \"Old wood\"") || !strings.Contains(out, "changed 1") {
		t.Errorf("xmp read printed:\n%s", out)
	}
	assets = listAssets(t, url, key, project)
	if r := assets["wood.jpg"].MyRating; r == nil || r.Rating == nil || *r.Rating != 5 {
		t.Errorf("wood.jpg's rating is %+v after xmp read, want 5", r)
	}
	if title := assets["wood.jpg"].IPTC["title"]; title != "Old wood" {
		t.Errorf("wood.jpg's title is %v after xmp read, want Old wood", title)
	}
	if r := assets["dune.jpg"].MyRating; r == nil || !r.Rejected {
		t.Errorf("dune.jpg is no longer rejected: %+v", r)
	}

	// --embed writes the packet into the JPEG itself and no sidecar; the
	// photos not in the folder are named.
	embedDir := t.TempDir()
	copyFile(t, photo(t, "wood.jpg"), filepath.Join(embedDir, "wood.jpg"), nil)
	if out := lightbox("xmp", "write", "--project", project, "--embed", embedDir); !strings.Contains(out, "matched 1, written 1, unchanged 0, not found 3 (blinds.jpg, dune.jpg, storm.jpg)") {
		t.Errorf("xmp write --embed printed:\n%s", out)
	}
	if rating, _ := exifXMP(t, filepath.Join(embedDir, "wood.jpg")); rating != "5" || len(xmpFiles(t, embedDir)) != 0 {
		t.Errorf("wood.jpg holds rating %q after --embed, sidecars %q; want 5 and none", rating, xmpFiles(t, embedDir))
	}
}

// TestXMPWriteGivesARawPlusJPEGPairOneSidecar: a camera's RAW+JPEG shot,
// uploaded as it comes off the card, is one photo to cull: its halves name
// each other, stars given to the raw are the JPEG's, and the one NAME.xmp
// Adobe's naming gives them both holds those stars.
func TestXMPWriteGivesARawPlusJPEGPairOneSidecar(t *testing.T) {
	url, key, lightbox := xmpStack(t)

	dir := t.TempDir()
	testenv.RawPlusJPEG(t, dir)
	project := uploadNew(t, lightbox, "Card", dir)
	var assets map[string]testAsset
	testenv.EventuallyEvery(t, "the pair to be ingested and paired", 5*time.Minute, time.Second, func() bool {
		assets = listAssets(t, url, key, project)
		for _, n := range []string{"IMG_0042.CRW", "IMG_0042.JPG"} {
			if assets[n].Flags.Readiness == "failed" {
				t.Fatalf("%s failed to ingest", n)
			}
		}
		return assets["IMG_0042.CRW"].PairAssetID != nil && assets["IMG_0042.JPG"].PairAssetID != nil
	})
	raws, jpegs := assets["IMG_0042.CRW"], assets["IMG_0042.JPG"]
	if *raws.PairAssetID != jpegs.ID || *jpegs.PairAssetID != raws.ID {
		t.Fatalf("the raw names %s and the JPEG %s; want each other (%s, %s)", *raws.PairAssetID, *jpegs.PairAssetID, raws.ID, jpegs.ID)
	}
	api(t, url, key, "POST", "/v1/assets/"+raws.ID+"/ratings", map[string]any{"rating": 4}, nil)
	if r := listAssets(t, url, key, project)["IMG_0042.JPG"].MyRating; r == nil || r.Rating == nil || *r.Rating != 4 {
		t.Fatalf("the JPEG's rating after starring the raw: %+v, want 4", r)
	}

	if out := lightbox("xmp", "write", "--project", project, dir); !strings.Contains(out, "matched 2, written 1, unchanged 1, not found 0") {
		t.Fatalf("xmp write printed:\n%s", out)
	}
	if got := xmpFiles(t, dir); strings.Join(got, " ") != "IMG_0042.xmp" {
		t.Fatalf("sidecars %q, want the pair's one IMG_0042.xmp", got)
	}
	if rating, _ := exifXMP(t, filepath.Join(dir, "IMG_0042.xmp")); rating != "4" {
		t.Errorf("IMG_0042.xmp holds rating %q, want 4", rating)
	}
}

// TestXMPUsageErrors: a mistyped xmp command line is a usage error and
// reaches no server.
func TestXMPUsageErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // bounds a hang only
	defer cancel()
	cmd := testenv.BuildCommand(ctx, t, ".")
	cmd.Env = []string{"LIGHTBOX_URL=http://127.0.0.1:1", "LIGHTBOX_API_KEY=lba_test"}
	const id = "9b2f6f1e-6a8e-4f43-9a37-1f0c1d6f2a10"
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"xmp"}, "xmp needs a subcommand"},
		{[]string{"xmp", "sync", "."}, `unknown command "xmp sync"`},
		{[]string{"xmp", "write", "--project", id}, "no folder given"},
		{[]string{"xmp", "write", "."}, "--project is required"},
		{[]string{"xmp", "write", "--project", "trip", "."}, `--project "trip" is not a project id`},
		{[]string{"xmp", "write", "--project", id, ".", "other"}, `unexpected argument "other"`},
		{[]string{"xmp", "write", "--project", id, "--naming", "capture", "."}, "--naming must be adobe or darktable"},
		{[]string{"xmp", "write", "--project", id, "--pick", "rating:9", "."}, "the rating must be 1 to 5"},
		{[]string{"xmp", "read", "--project", id, "--dry-run", "."}, "flag provided but not defined: -dry-run"},
		{[]string{"xmp", "read", "--project", id, "--url", "ftp://example.org", "."}, "is not an http:// or https:// URL"},
		{[]string{"xmp", "read", ".", "--project", id, "--api-key", ""}, "LIGHTBOX_API_KEY is not set"},
	} {
		status, stdout, stderr := cmd.Run(c.args...)
		if status != 2 || stdout != "" || !strings.Contains(stderr, c.says) || !strings.Contains(stderr, "usage:") {
			t.Errorf("lightbox %q: status %d, stdout %q, stderr %q; want 2 and %q", c.args, status, stdout, stderr, c.says)
		}
	}
}
