package server_test

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// onePhotoGallery is an open gallery of one photo of a new project of key's.
func (a *app) onePhotoGallery(key string) (photo, slug, id string) {
	a.t.Helper()
	project := a.newProject(key)
	_, ups := a.uploadAll(key, project, corpus(a.t, "photos/wood.jpg"))
	photo = ups[0].AssetID
	g := a.newGallery(key, project, map[string]any{"title": "Proofs", "assetIds": []string{photo}})
	return photo, g["shareSlug"].(string), g["id"].(string)
}

// One viewer posts 99 comments of 2,000 characters at once: 50 are kept,
// the rest refused, and the owner reads what was kept a page at a time.
// Another viewer, from another address, still comments.
func TestOneViewerPostingNinetyNineCommentsIsStoppedAtFifty(t *testing.T) {
	t.Parallel()
	a := appWithEnv(t, "TRUSTED_PROXIES", "127.0.0.1/32")
	key := a.user("ana@example.org", false)
	photo, slug, id := a.onePhotoGallery(key)
	viewer := func(addr string) string {
		r := a.do("POST", "/v1/share/"+slug+"/auth", "", map[string]any{}, "X-Forwarded-For", addr)
		expect(t, r, 200, "")
		return r.json(t)["token"].(string)
	}
	spammer := viewer("203.0.113.7")

	var wg sync.WaitGroup
	var mu sync.Mutex
	answers := map[string]int{}
	text := strings.Repeat("x", 2000)
	for range 99 {
		wg.Go(func() {
			r := a.do("POST", "/v1/share/"+slug+"/comment", spammer, map[string]any{"assetId": photo, "text": text},
				"X-Forwarded-For", "203.0.113.7")
			code := strconv.Itoa(r.status)
			if r.status != 201 {
				code += " " + r.json(t)["code"].(string)
			}
			mu.Lock()
			answers[code]++
			mu.Unlock()
		})
	}
	wg.Wait()
	t.Logf("99 comments at once from one viewer: %v", answers)
	if kept := a.count(`SELECT count(*) FROM gallery_comments WHERE gallery_id = $1`, id); kept != 50 || answers["201"] != 50 {
		t.Fatalf("%d comments kept (%v); want the viewer's 50", kept, answers)
	}
	if answers["403 viewer_comment_limit"] == 0 {
		t.Errorf("answers %v: none says the viewer reached its cap", answers)
	}
	r := a.do("POST", "/v1/share/"+slug+"/comment", viewer("198.51.100.9"), map[string]any{"assetId": photo, "text": "The second, please."},
		"X-Forwarded-For", "198.51.100.9")
	expect(t, r, 201, "")

	// The owner's list, 20 at a time: 51 comments, oldest first, in 3 pages.
	var texts []string
	cursor, pages := "", 0
	for ; pages == 0 || cursor != ""; pages++ {
		r := a.do("GET", "/v1/galleries/"+id+"/comments?limit=20&cursor="+cursor, key, nil)
		expect(t, r, 200, "")
		page := r.json(t)
		for _, it := range page["items"].([]any) {
			texts = append(texts, it.(map[string]any)["text"].(string))
		}
		cursor, _ = page["pageInfo"].(map[string]any)["nextCursor"].(string)
	}
	if len(texts) != 51 || pages != 3 || texts[50] != "The second, please." {
		t.Fatalf("the owner read %d comments in %d pages, the last %q", len(texts), pages, texts[len(texts)-1])
	}
	expect(t, a.do("GET", "/v1/galleries/"+id+"/comments?limit=0", key, nil), 400, "validation_failed")
	expect(t, a.do("GET", "/v1/galleries/"+id+"/comments?cursor=nope", key, nil), 400, "invalid_cursor")
}

// A gallery holds 5,000 comments and 1,000 live viewers, and gives one
// address 30 viewer tokens an hour; past them, clear refusals.
func TestGalleryCommentsAndViewersAreCapped(t *testing.T) {
	t.Parallel()
	a := appWithEnv(t, "TRUSTED_PROXIES", "127.0.0.1/32")
	key := a.user("ana@example.org", false)
	photo, slug, id := a.onePhotoGallery(key)
	auth := func(addr string) reply {
		return a.do("POST", "/v1/share/"+slug+"/auth", "", map[string]any{}, "X-Forwarded-For", addr)
	}

	// One address: 30 tokens, then 429.
	for i := range 30 {
		if r := auth("203.0.113.7"); r.status != 200 {
			t.Fatalf("token %d: %d %s", i+1, r.status, r.body)
		}
	}
	expectRetryAfter(t, auth("203.0.113.7"))
	// Opening the gallery there still shows the photos, without a new token.
	shown := func(addr string) {
		t.Helper()
		r := a.do("GET", "/v1/share/"+slug, "", nil, "X-Forwarded-For", addr)
		expect(t, r, 200, "")
		if s := r.json(t); s["token"] != nil || len(s["assets"].([]any)) != 1 || r.header.Get("Retry-After") != "" {
			t.Fatalf("the gallery past the viewer caps: %s", r.body)
		}
	}
	shown("203.0.113.7")
	token := auth("198.51.100.9").json(t)["token"].(string)

	// 5,000 comments: no more.
	a.env.Comments(t, uuid.MustParse(id), uuid.MustParse(photo), 4999)
	comment := func() reply {
		return a.do("POST", "/v1/share/"+slug+"/comment", token, map[string]any{"assetId": photo, "text": "one more"},
			"X-Forwarded-For", "198.51.100.9")
	}
	expect(t, comment(), 201, "")
	expect(t, comment(), 403, "gallery_comment_limit")

	// 1,000 live viewers (31 so far): then 429 until the oldest expires.
	a.env.Viewers(t, uuid.MustParse(id), 969, 2*time.Hour)
	r := auth("192.0.2.1")
	expect(t, r, 429, "gallery_viewer_limit")
	shown("192.0.2.1")
	if retry, _ := strconv.Atoi(r.header.Get("Retry-After")); time.Duration(retry)*time.Second < 119*time.Minute ||
		time.Duration(retry)*time.Second > 2*time.Hour {
		t.Errorf("Retry-After %q; want the two hours until the first viewer expires", r.header.Get("Retry-After"))
	}
	a.env.Age(t, "gallery_viewers", "expires_at", 0,
		"id = (SELECT id FROM gallery_viewers WHERE gallery_id = $1 ORDER BY expires_at LIMIT 1)", id)
	expect(t, auth("192.0.2.1"), 200, "")
}
