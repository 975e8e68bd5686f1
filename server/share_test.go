package server_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"lightbox/blob"

	"github.com/google/uuid"
)

func TestShareWithAPassword(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.startWorker()
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	photos := a.readyPhotos(key, project, "photos/wood.jpg", "photos/dune.jpg", "photos/storm.jpg")
	g := a.newGallery(key, project, map[string]any{"title": "Harbour wedding", "password": "open sesame",
		"assetIds": photos[:2], "allowDownloads": true})
	slug, id := g["shareSlug"].(string), g["id"].(string)

	expect(t, a.viewer("GET", "no-such-gallery", "", "", nil), 404, "not_found")
	expect(t, a.viewer("POST", "no-such-gallery", "/auth", "", map[string]any{"password": "x"}), 404, "not_found")

	// Without a token: what the gallery is, not its photos.
	r := a.viewer("GET", slug, "", "", nil)
	expect(t, r, 200, "")
	if r.header.Get("X-RateLimit-Limit") == "" {
		t.Error("the public routes are not rate-limited")
	}
	if s := r.json(t); s["title"] != "Harbour wedding" || s["requiresAuth"] != true || s["allowDownloads"] != true || s["assets"] != nil {
		t.Errorf("share without a token: %s", r.body)
	}
	expect(t, a.viewer("POST", slug, "/auth", "", map[string]any{"password": "open says me"}), 401, "wrong_password")
	expect(t, a.viewer("POST", slug, "/favorite", "", map[string]any{"assetId": photos[0], "favorite": true}), 401, "viewer_token_required")
	expect(t, a.viewer("GET", slug, "", "lbv_made-up", nil), 401, "invalid_viewer_token")

	token := a.viewerToken(slug, "open sesame")
	s := a.share(slug, token)
	if len(s.Assets) != 2 || s.Assets[0].AssetID != photos[0] || s.Assets[1].AssetID != photos[1] {
		t.Fatalf("assets %+v", s.Assets)
	}
	for _, as := range s.Assets {
		if as.Pending || as.PreviewURL == nil || as.OriginalURL == nil || as.FavoriteCount != 0 || as.CommentsCount != 0 {
			t.Fatalf("asset %+v", as)
		}
	}
	if a.image(*s.Assets[0].PreviewURL).Bounds().Dx() == 0 {
		t.Fatal("empty preview")
	}

	// Favourites: once per viewer; a second viewer counts too.
	fav := func(token, asset string, on bool) reply {
		return a.viewer("POST", slug, "/favorite", token, map[string]any{"assetId": asset, "favorite": on})
	}
	for range 2 {
		r = fav(token, photos[0], true)
		expect(t, r, 200, "")
		if n := r.json(t)["favoriteCount"]; n != 1.0 {
			t.Fatalf("favoriteCount %v, want 1", n)
		}
	}
	other := a.viewerToken(slug, "open sesame")
	if n := fav(other, photos[0], true).json(t)["favoriteCount"]; n != 2.0 {
		t.Fatalf("favoriteCount %v after a second viewer, want 2", n)
	}
	if n := fav(other, photos[0], false).json(t)["favoriteCount"]; n != 1.0 {
		t.Fatalf("favoriteCount %v after unfavouriting, want 1", n)
	}
	expect(t, fav(token, photos[2], true), 404, "not_found") // in the project, not in the gallery
	expect(t, fav(token, uuid.NewString(), true), 404, "not_found")
	expect(t, fav(token, "nope", true), 400, "validation_failed")
	expect(t, a.viewer("POST", slug, "/favorite", token, map[string]any{"assetId": photos[0]}), 400, "validation_failed")

	// Comments: 1 to 2,000 characters.
	comment := func(text string) reply {
		return a.viewer("POST", slug, "/comment", token, map[string]any{"assetId": photos[1], "text": text})
	}
	for _, bad := range []string{strings.Repeat("x", 10_000), strings.Repeat("é", 2001), "", "   "} {
		expect(t, comment(bad), 400, "validation_failed")
	}
	r = comment(strings.Repeat("é", 2000))
	expect(t, r, 201, "")
	r = comment("The second one, please, in black and white.")
	expect(t, r, 201, "")
	if n := r.json(t)["commentsCount"]; n != 2.0 {
		t.Fatalf("commentsCount %v, want 2", n)
	}
	expect(t, a.viewer("POST", slug, "/comment", token, map[string]any{"assetId": photos[2], "text": "hi"}), 404, "not_found")

	s = a.share(slug, token)
	if s.Assets[0].FavoriteCount != 1 || !s.Assets[0].Favorited || s.Assets[1].CommentsCount != 2 || s.Assets[1].Favorited {
		t.Errorf("counts %+v", s.Assets)
	}
	r = a.do("GET", "/v1/galleries/"+id+"/comments", key, nil)
	if items := decode[pageOf[struct{ Text string }]](t, r).Items; len(items) != 2 || items[1].Text != "The second one, please, in black and white." {
		t.Errorf("the owner's comments: %s", r.body)
	}

	// A token of another gallery is refused.
	open := a.newGallery(key, project, map[string]any{"title": "Open", "assetIds": photos[2:]})
	foreign := a.viewerToken(open["shareSlug"].(string), "")
	expect(t, a.viewer("GET", slug, "", foreign, nil), 401, "invalid_viewer_token")
	expect(t, fav(foreign, photos[0], true), 401, "invalid_viewer_token")
	// The open gallery shows its photos without a token, and takes any
	// password. Its answer to a caller without a token brings one, which
	// favourites at once; a caller with a token gets none.
	s = a.share(open["shareSlug"].(string), "")
	if s.RequiresAuth || len(s.Assets) != 1 || s.Assets[0].OriginalURL != nil || !strings.HasPrefix(s.Token, "lbv_") {
		t.Errorf("open gallery %+v", s)
	}
	r = a.viewer("POST", open["shareSlug"].(string), "/favorite", s.Token, map[string]any{"assetId": photos[2], "favorite": true})
	expect(t, r, 200, "")
	if got := r.json(t); got["ok"] != true || got["favoriteCount"] != 1.0 {
		t.Errorf("favourite with the answer's token: %s", r.body)
	}
	if again := a.share(open["shareSlug"].(string), s.Token); again.Token != "" || !again.Assets[0].Favorited {
		t.Errorf("open gallery with a token %+v", again)
	}

	// Downloads off: no original links. A new password ends the old tokens.
	a.do("PATCH", "/v1/galleries/"+id, key, map[string]any{"allowDownloads": false})
	if s := a.share(slug, token); s.AllowDownloads || s.Assets[0].OriginalURL != nil {
		t.Errorf("originals offered with downloads off: %+v", s)
	}
	a.do("PATCH", "/v1/galleries/"+id, key, map[string]any{"password": "another one"})
	expect(t, a.viewer("GET", slug, "", token, nil), 401, "invalid_viewer_token")

	// Expired: 410 on every route.
	a.env.Age(t, "galleries", "expires_at", time.Minute, "id = $1", id)
	expect(t, a.viewer("GET", slug, "", "", nil), 410, "gallery_expired")
	expect(t, a.viewer("POST", slug, "/auth", "", map[string]any{"password": "another one"}), 410, "gallery_expired")
	expect(t, fav(token, photos[0], true), 410, "gallery_expired")
	expect(t, comment("late"), 410, "gallery_expired")
}

func TestShareLocksOutTenWrongPasswords(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	locked := a.newGallery(key, project, map[string]any{"title": "A", "password": "right one"})["shareSlug"].(string)
	other := a.newGallery(key, project, map[string]any{"title": "B", "password": "right one"})["shareSlug"].(string)
	auth := func(slug, pw string) reply {
		return a.viewer("POST", slug, "/auth", "", map[string]any{"password": pw})
	}
	for i := range 9 {
		expect(t, auth(locked, "wrong "+string(rune('a'+i))), 401, "wrong_password")
	}
	r := auth(locked, "wrong again")
	expect(t, r, 429, "too_many_attempts")
	if r.header.Get("Retry-After") == "" {
		t.Error("no Retry-After")
	}
	expect(t, auth(locked, "right one"), 429, "too_many_attempts")
	// Another gallery is not locked for the address.
	expect(t, auth(other, "wrong"), 401, "wrong_password")
	expect(t, auth(other, "right one"), 200, "")
	// Once the lock lapses, the right password works and clears the count.
	a.env.Redis.FlushDB(t.Context())
	expect(t, auth(locked, "right one"), 200, "")
	for range 9 {
		expect(t, auth(locked, "wrong"), 401, "wrong_password")
	}
	expect(t, auth(locked, "right one"), 200, "")
	expect(t, auth(locked, "wrong"), 401, "wrong_password")
}

func TestShareWatermarkedGallery(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.startWorker()
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	photos := a.readyPhotos(key, project, "photos/wood.jpg", "photos/dune.jpg")
	g := a.newGallery(key, project, map[string]any{"title": "Proofs", "watermark": true, "assetIds": photos[:1]})
	slug, id := g["shareSlug"].(string), g["id"].(string)
	batch, _ := g["renderBatchId"].(string)
	if batch == "" {
		t.Fatalf("no render batch: %v", g)
	}
	if b := a.waitBatch(key, batch, "completed"); b.Batch.Total != 1 || len(b.Jobs) != 1 || b.Jobs[0].AssetID != photos[0] {
		t.Fatalf("render batch %+v", b)
	}

	s := a.share(slug, "")
	if len(s.Assets) != 1 || s.Assets[0].Pending || !strings.Contains(*s.Assets[0].PreviewURL, "/galleries/"+id+"/") {
		t.Fatalf("watermarked gallery %+v", s.Assets)
	}
	marked := a.image(*s.Assets[0].PreviewURL)

	// Watermark off: the plain preview, the same size.
	a.do("PATCH", "/v1/galleries/"+id, key, map[string]any{"watermark": false})
	s = a.share(slug, "")
	if strings.Contains(*s.Assets[0].PreviewURL, "/galleries/") {
		t.Fatalf("a plain gallery shows %s", *s.Assets[0].PreviewURL)
	}
	if plain := a.image(*s.Assets[0].PreviewURL); plain.Bounds() != marked.Bounds() {
		t.Errorf("watermarked %v, plain %v", marked.Bounds(), plain.Bounds())
	}
	// On again: nothing to render; a new photo is rendered, and pending until then.
	r := a.do("PATCH", "/v1/galleries/"+id, key, map[string]any{"watermark": true})
	if _, ok := r.json(t)["renderBatchId"]; ok {
		t.Errorf("turning the watermark on again rendered again: %s", r.body)
	}
	r = a.do("POST", "/v1/galleries/"+id+"/assets", key, map[string]any{"assetIds": photos[1:]})
	batch, _ = r.json(t)["renderBatchId"].(string)
	if batch == "" {
		t.Fatalf("adding a photo to a watermarked gallery: %s", r.body)
	}
	// A pending photo shows the placeholder, never the unmarked preview.
	if s := a.share(slug, ""); len(s.Assets) != 2 ||
		s.Assets[1].Pending != (*s.Assets[1].PreviewURL == a.url+"/static/pending.svg") ||
		(!s.Assets[1].Pending && !strings.Contains(*s.Assets[1].PreviewURL, "/galleries/")) {
		t.Fatalf("assets %+v", s.Assets)
	}
	a.waitBatch(key, batch, "completed")
	if s := a.share(slug, ""); s.Assets[1].Pending || !strings.Contains(*s.Assets[1].PreviewURL, "/galleries/") {
		t.Fatalf("assets %+v", s.Assets)
	}

	// Listed with the project's others; deleted, its link and its
	// watermarked previews are gone.
	other := a.newGallery(key, project, map[string]any{"title": "Plain"})
	r = a.do("GET", "/v1/projects/"+project+"/galleries?limit=1", key, nil)
	expect(t, r, 200, "")
	page := decode[pageOf[created]](t, r)
	if page.PageInfo.NextCursor == nil {
		t.Fatalf("one gallery of two, without a next cursor: %s", r.body)
	}
	first := page.Items
	r = a.do("GET", "/v1/projects/"+project+"/galleries?limit=1&cursor="+*page.PageInfo.NextCursor, key, nil)
	expect(t, r, 200, "")
	second := decode[pageOf[created]](t, r).Items
	if len(first) != 1 || len(second) != 1 || first[0].ID != other["id"] || second[0].ID != id {
		t.Fatalf("listed %v then %v", first, second)
	}
	var keys []string
	a.env.DB.Select(&keys, `SELECT watermark_key FROM gallery_assets WHERE gallery_id = $1 AND watermark_key IS NOT NULL`, id)
	if len(keys) != 2 {
		t.Fatalf("watermarked previews %v, want 2", keys)
	}
	bob := a.user("bob@example.org", false)
	expect(t, a.do("DELETE", "/v1/galleries/"+id, bob, nil), 404, "not_found")
	expect(t, a.do("GET", "/v1/projects/"+project+"/galleries", bob, nil), 404, "not_found")
	expect(t, a.do("DELETE", "/v1/galleries/"+id, key, nil), 204, "")
	expect(t, a.viewer("GET", slug, "", "", nil), 404, "not_found")
	expect(t, a.do("DELETE", "/v1/galleries/"+id, key, nil), 404, "not_found")
	for _, k := range keys {
		if _, err := a.blobs.Stat(context.Background(), k); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("watermarked preview %s after the gallery was deleted: %v", k, err)
		}
	}
	if n := a.count(`SELECT count(*) FROM gallery_assets WHERE gallery_id = $1`, id); n != 0 {
		t.Errorf("%d photos left in the deleted gallery", n)
	}
}

func TestShareRoutesAreLimitedPerAddress(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	// The whole burst, then a refusal: unknown slugs spend from it too,
	// so guessing slugs is limited as well. Eight at a time, so that a
	// busy machine's slow answers never let the budget refill (5 a
	// second) as fast as it is spent.
	var (
		mu      sync.Mutex
		refused *reply
		sent    int
		wg      sync.WaitGroup
	)
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				mu.Lock()
				stop := refused != nil || sent >= 2000
				sent++
				mu.Unlock()
				if stop {
					return
				}
				r := a.viewer("GET", fmt.Sprintf("guess-%d-%d", w, i), "", "", nil)
				if r.status != 404 {
					mu.Lock()
					if refused == nil {
						refused = &r
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if refused == nil {
		t.Fatal("2,000 requests from one address were never limited")
	}
	r := *refused
	expect(t, r, 429, "rate_limited")
	if limit := r.header.Get("X-RateLimit-Limit"); limit != "100" || r.header.Get("Retry-After") == "" {
		t.Errorf("limit %q, Retry-After %q", limit, r.header.Get("Retry-After"))
	}
}

// A photo that fails (or is a duplicate) has no preview to show or mark:
// clients do not see it, rather than a photo pending for ever.
func TestShareLeavesOutPhotosThatFailed(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.startWorker()
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	_, ups := a.uploadAll(key, project, corpus(t, "photos/wood.jpg", "bad/truncated-progressive.jpg"))
	good, broken := ups[0].AssetID, ups[1].AssetID
	g := a.newGallery(key, project, map[string]any{"title": "Proofs", "watermark": true, "assetIds": []string{good, broken}})
	waitCount(t, a, "the broken photo failed", 1, `SELECT count(*) FROM assets WHERE id = $1 AND status = 'failed'`, broken)
	a.waitBatch(key, g["renderBatchId"].(string), "partial")
	s := a.share(g["shareSlug"].(string), "")
	if len(s.Assets) != 1 || s.Assets[0].AssetID != good || s.Assets[0].Pending {
		t.Fatalf("gallery shows %+v, want only the good photo, marked", s.Assets)
	}
	if n := a.do("GET", "/v1/galleries/"+g["id"].(string), key, nil).json(t)["assetCount"]; n != 2.0 {
		t.Fatalf("the owner's count %v, want both photos", n)
	}
}

// An empty gallery lists no photos, with or without a password: the key
// left out is what tells a viewer to sign in.
func TestShareOfAnEmptyGalleryListsNoPhotos(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	open := a.newGallery(key, project, map[string]any{"title": "Soon"})
	locked := a.newGallery(key, project, map[string]any{"title": "Soon, locked", "password": "correct horse"})
	slug := locked["shareSlug"].(string)
	for _, r := range []struct {
		what string
		got  reply
		want string
	}{
		{"open", a.viewer("GET", open["shareSlug"].(string), "", "", nil), `"assets":[]`},
		{"locked, signed in", a.viewer("GET", slug, "", a.viewerToken(slug, "correct horse"), nil), `"assets":[]`},
	} {
		expect(t, r.got, 200, "")
		if !bytes.Contains(r.got.body, []byte(r.want)) {
			t.Errorf("%s: %s, want %s", r.what, r.got.body, r.want)
		}
	}
	if r := a.viewer("GET", slug, "", "", nil); bytes.Contains(r.body, []byte(`"assets"`)) {
		t.Errorf("locked, not signed in: %s lists photos", r.body)
	}
}

// A deleted project takes its galleries off the web: every share route
// answers as for an unknown address, and restoring the project brings
// them back.
func TestShareOfADeletedProjectIsGone(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	_, ups := a.uploadAll(key, project, corpus(t, "photos/wood.jpg"))
	photo := ups[0].AssetID
	slug := a.newGallery(key, project, map[string]any{"title": "Proofs", "assetIds": []string{photo}})["shareSlug"].(string)
	token := a.viewerToken(slug, "")

	expect(t, a.do("PATCH", "/v1/projects/"+project, key, map[string]any{"status": "deleted"}), 200, "")
	expect(t, a.viewer("GET", slug, "", "", nil), 404, "not_found")
	expect(t, a.viewer("GET", slug, "", token, nil), 404, "not_found")
	expect(t, a.viewer("POST", slug, "/auth", "", map[string]any{"password": ""}), 404, "not_found")
	expect(t, a.viewer("POST", slug, "/favorite", token, map[string]any{"assetId": photo, "favorite": true}), 404, "not_found")
	expect(t, a.viewer("POST", slug, "/comment", token, map[string]any{"assetId": photo, "text": "hi"}), 404, "not_found")
	if n := a.count(`SELECT count(*) FROM gallery_favorites`) + a.count(`SELECT count(*) FROM gallery_comments`); n != 0 {
		t.Fatalf("%d favourites and comments kept for a deleted project's gallery", n)
	}

	expect(t, a.do("PATCH", "/v1/projects/"+project, key, map[string]any{"status": "active"}), 200, "")
	if s := a.share(slug, token); len(s.Assets) != 1 || s.Assets[0].AssetID != photo {
		t.Fatalf("restored project's gallery shows %+v", s.Assets)
	}
}
