package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/google/uuid"

	"lightbox/blob"
	"lightbox/store"
	"lightbox/testsupport/testenv"
)

// TestFinalizeQueuesThumbnailsAheadOfIngest: with THUMBNAILS_FIRST (the
// default) finalize queues each photo's thumbnail on the thumbnails queue
// beside its ingest; without it, only the ingest.
func TestFinalizeQueuesThumbnailsAheadOfIngest(t *testing.T) {
	t.Parallel()
	for _, first := range []bool{true, false} {
		t.Run("THUMBNAILS_FIRST="+strconv.FormatBool(first), func(t *testing.T) {
			t.Parallel()
			env := testenv.New(t)
			a := startAppWith(t, env, env.Redis, options{env: map[string]string{"THUMBNAILS_FIRST": strconv.FormatBool(first)}})
			in := inspector(t, env)
			key := a.user("ana@example.org", false)
			project := a.newProject(key)
			r, ups := a.uploadAll(key, project, corpus(t, "photos/wood.jpg", "photos/dune.jpg"))
			expect(t, r, 200, "")
			for _, u := range ups {
				info, err := in.GetTaskInfo("thumbnails", "thumbnail:"+u.AssetID)
				if first && (err != nil || info.Type != "asset:thumbnail") {
					t.Errorf("asset %s: thumbnail task %v, %v", u.AssetID, info, err)
				}
				if !first && err == nil {
					t.Errorf("asset %s: a thumbnail task was queued with THUMBNAILS_FIRST=false", u.AssetID)
				}
				if _, err := in.GetTaskInfo("default", "ingest:"+u.AssetID); err != nil {
					t.Errorf("asset %s: ingest task: %v", u.AssetID, err)
				}
			}
		})
	}
}

// TestAPhotoWithOnlyItsThumbnail is a photo whose thumbnail was made ahead
// of its ingest, as clients see it: still processing, its thumbnail flag
// set and the file listed and served.
func TestAPhotoWithOnlyItsThumbnail(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	r, ups := a.uploadAll(key, project, corpus(t, "photos/wood.jpg"))
	expect(t, r, 200, "")
	id := ups[0].AssetID

	flags := func() map[string]any {
		r := a.do("GET", "/v1/assets/"+id, key, nil)
		expect(t, r, 200, "")
		return r.json(t)["flags"].(map[string]any)
	}
	if f := flags(); f["thumbnail"] != false || f["thumbnailReady"] != false || f["readiness"] != "uploaded" {
		t.Fatalf("flags before any thumbnail: %v", f)
	}

	thumb := []byte("\xff\xd8 a thumbnail's bytes \xff\xd9")
	asset := uuid.MustParse(id)
	k := blob.DerivedKey(asset, blob.KindThumbnail)
	info, err := a.blobs.Put(context.Background(), k, bytes.NewReader(thumb), int64(len(thumb)))
	if err != nil {
		t.Fatal(err)
	}
	w, h := 320, 240
	if err := a.env.Store.SaveThumbnail(context.Background(), store.AssetFile{AssetID: asset, Kind: blob.KindThumbnail, BlobKey: k,
		ContentType: "image/jpeg", ByteSize: info.Size, ChecksumSHA256: info.SHA256, WidthPx: &w, HeightPx: &h}); err != nil {
		t.Fatal(err)
	}
	if f := flags(); f["thumbnail"] != true || f["thumbnailReady"] != true || f["preview"] != false ||
		f["previewReady"] != false || f["processingReady"] != false || f["readiness"] != "uploaded" {
		t.Fatalf("flags with the thumbnail alone: %v", f)
	}
	r = a.do("GET", "/v1/assets/"+id+"/files", key, nil)
	expect(t, r, 200, "")
	var files struct {
		Files []struct {
			Kind           string `json:"kind"`
			URL            string `json:"url"`
			ChecksumSHA256 string `json:"checksumSha256"`
		} `json:"files"`
	}
	if err := json.Unmarshal(r.body, &files); err != nil {
		t.Fatal(err)
	}
	var url string
	for _, f := range files.Files {
		if f.Kind == "thumbnail" {
			url = f.URL
		}
	}
	if url == "" {
		t.Fatalf("files %+v list no thumbnail", files.Files)
	}
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	got, _ := io.ReadAll(res.Body)
	sum := sha256.Sum256(got)
	if res.StatusCode != 200 || hex.EncodeToString(sum[:]) != info.SHA256 {
		t.Fatalf("GET thumbnail: %d, %d bytes, want the %d stored", res.StatusCode, len(got), len(thumb))
	}
}
