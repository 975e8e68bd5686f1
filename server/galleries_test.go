package server_test

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestGalleryOwnerRoutes(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	bob := a.user("bob@example.org", false)
	project, other := a.newProject(key), a.newProject(key)
	_, ups := a.uploadAll(key, project, corpus(t, "photos/wood.jpg", "photos/dune.jpg"))
	_, foreign := a.uploadAll(key, other, corpus(t, "photos/wood.jpg"))
	mine1, mine2, theirs := ups[0].AssetID, ups[1].AssetID, foreign[0].AssetID
	path := "/v1/projects/" + project + "/galleries"

	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		body  string
		field string
	}{
		{`{}`, "title"},
		{`{"title": "  "}`, "title"},
		{`{"title": "` + strings.Repeat("x", 201) + `"}`, "title"},
		{`{"title": "W", "shareSlug": "ab"}`, "shareSlug"},
		{`{"title": "W", "shareSlug": "Wedding"}`, "shareSlug"},
		{`{"title": "W", "shareSlug": "a/b/c"}`, "shareSlug"},
		{`{"title": "W", "password": "abc"}`, "password"},
		{`{"title": "W", "expiresAt": "` + past + `"}`, "expiresAt"},
		{`{"title": "W", "assetIds": ["nope"]}`, "assetIds[0]"},
		{`{"title": "W", "assetIds": ["` + theirs + `"]}`, "assetIds"},
	} {
		r := a.do("POST", path, key, c.body)
		expect(t, r, 400, "validation_failed")
		if f := fields(t, r); f[c.field] == nil || len(f) != 1 {
			t.Errorf("%s: fields %v, want %s named", c.body, f, c.field)
		}
	}
	// An asset of another project is named, and nothing is recorded.
	r := a.do("POST", path, key, map[string]any{"title": "W", "assetIds": []string{mine1, theirs}})
	if ids, _ := details(t, r)["assetIds"].([]any); len(ids) != 1 || ids[0] != theirs {
		t.Errorf("details %s", r.body)
	}
	expect(t, a.do("POST", path, key, `{"title": "W", "colour": "red"}`), 400, "invalid_json")
	expect(t, a.do("POST", path, bob, map[string]any{"title": "W"}), 404, "not_found")
	if n := a.count(`SELECT count(*) FROM galleries`); n != 0 {
		t.Fatalf("%d galleries recorded from refused requests", n)
	}

	g := a.newGallery(key, project, map[string]any{"title": "Harbour wedding", "password": "s3cret pass",
		"assetIds": []string{mine1}, "allowDownloads": true})
	id := g["id"].(string)
	if !regexp.MustCompile(`^[a-z2-7]{10}$`).MatchString(g["shareSlug"].(string)) {
		t.Errorf("made slug %q", g["shareSlug"])
	}
	if g["requiresPassword"] != true || g["watermark"] != false || g["allowDownloads"] != true || g["assetCount"] != 1.0 ||
		g["projectId"] != project || g["expiresAt"] != nil || g["shareUrl"] != a.url+"/s/"+g["shareSlug"].(string) {
		t.Errorf("gallery %v", g)
	}
	if _, ok := g["renderBatchId"]; ok {
		t.Error("a gallery without a watermark started renders")
	}
	if strings.Contains(string(a.do("GET", "/v1/galleries/"+id, key, nil).body), "s3cret") {
		t.Error("the password shows")
	}
	var hash string
	a.env.DB.Get(&hash, `SELECT password_hash FROM galleries WHERE id = $1`, id)
	if !strings.HasPrefix(hash, "$argon2id$v=19$") || strings.Contains(hash, "s3cret") {
		t.Errorf("stored password %q", hash)
	}

	// A chosen slug is unique.
	named := a.newGallery(key, project, map[string]any{"title": "Second", "shareSlug": "ana-and-ben-2026"})
	if named["shareSlug"] != "ana-and-ben-2026" || named["requiresPassword"] != false {
		t.Errorf("named gallery %v", named)
	}
	expect(t, a.do("POST", path, key, map[string]any{"title": "Third", "shareSlug": "ana-and-ben-2026"}), 409, "slug_taken")

	// Another user's gallery does not exist for them.
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/galleries/" + id}, {"PATCH", "/v1/galleries/" + id}, {"POST", "/v1/galleries/" + id + "/assets"},
		{"DELETE", "/v1/galleries/" + id + "/assets"}, {"GET", "/v1/galleries/" + id + "/comments"},
		{"GET", "/v1/galleries/not-an-id"},
	} {
		expect(t, a.do(c.method, c.path, bob, map[string]any{"assetIds": []string{mine2}, "title": "Mine"}), 404, "not_found")
	}
	expect(t, a.do("GET", "/v1/galleries/"+id, key, nil), 200, "")

	// PATCH: each field, and bad values.
	future := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	r = a.do("PATCH", "/v1/galleries/"+id, key, map[string]any{"title": "Harbour", "password": nil, "allowDownloads": false,
		"expiresAt": future.Format(time.RFC3339)})
	expect(t, r, 200, "")
	if p := r.json(t); p["title"] != "Harbour" || p["requiresPassword"] != false || p["allowDownloads"] != false ||
		p["expiresAt"] != future.Format(time.RFC3339) || p["shareSlug"] != g["shareSlug"] {
		t.Errorf("patched %s", r.body)
	}
	r = a.do("PATCH", "/v1/galleries/"+id, key, map[string]any{"password": "new password", "expiresAt": nil})
	if p := r.json(t); p["requiresPassword"] != true || p["expiresAt"] != nil || p["title"] != "Harbour" {
		t.Errorf("patched %s", r.body)
	}
	for body, field := range map[string]string{
		`{"title": null}`: "title", `{"title": ""}`: "title", `{"password": "ab"}`: "password",
		`{"watermark": null}`: "watermark", `{"expiresAt": "` + past + `"}`: "expiresAt",
	} {
		r := a.do("PATCH", "/v1/galleries/"+id, key, body)
		expect(t, r, 400, "validation_failed")
		if f := fields(t, r); f[field] == nil {
			t.Errorf("%s: fields %v", body, f)
		}
	}
	expect(t, a.do("PATCH", "/v1/galleries/"+id, key, `{"shareSlug": "other"}`), 400, "invalid_json")
	expect(t, a.do("PATCH", "/v1/galleries/"+id, key, `{"watermark": "yes"}`), 400, "validation_failed")

	// Photos: only the project's, all or nothing.
	assets := "/v1/galleries/" + id + "/assets"
	r = a.do("POST", assets, key, map[string]any{"assetIds": []string{mine2, theirs}})
	expect(t, r, 400, "validation_failed")
	if ids, _ := details(t, r)["assetIds"].([]any); len(ids) != 1 || ids[0] != theirs {
		t.Errorf("details %s", r.body)
	}
	expect(t, a.do("POST", assets, key, map[string]any{"assetIds": []string{}}), 400, "validation_failed")
	expect(t, a.do("DELETE", assets, key, map[string]any{"assetIds": []string{theirs}}), 400, "validation_failed")
	if n := a.count(`SELECT count(*) FROM gallery_assets WHERE gallery_id = $1`, id); n != 1 {
		t.Fatalf("%d photos after refused changes, want 1", n)
	}
	for range 2 { // adding twice is adding once
		r = a.do("POST", assets, key, map[string]any{"assetIds": []string{mine2, mine1}})
		expect(t, r, 200, "")
		if n := r.json(t)["assetCount"]; n != 2.0 {
			t.Fatalf("assetCount %v after adding, want 2", n)
		}
	}
	r = a.do("DELETE", assets, key, map[string]any{"assetIds": []string{mine1}})
	expect(t, r, 200, "")
	if n := r.json(t)["assetCount"]; n != 1.0 {
		t.Fatalf("assetCount %v after removing, want 1", n)
	}
	expect(t, a.do("GET", "/v1/galleries/"+id+"/comments", key, nil), 200, "")
}

// TestGalleryCountsWhatViewersLeft: the owner's gallery, alone and in the
// project's list, counts its viewers' favourites and comments, each
// gallery its own.
func TestGalleryCountsWhatViewersLeft(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	_, ups := a.uploadAll(key, project, corpus(t, "photos/wood.jpg", "photos/dune.jpg"))
	photos := []string{ups[0].AssetID, ups[1].AssetID}
	g := a.newGallery(key, project, map[string]any{"title": "Proofs", "assetIds": photos})
	quiet := a.newGallery(key, project, map[string]any{"title": "Quiet", "assetIds": photos})
	if g["favoriteCount"] != 0.0 || g["commentsCount"] != 0.0 {
		t.Fatalf("a new gallery counts %v favourites and %v comments", g["favoriteCount"], g["commentsCount"])
	}
	slug := g["shareSlug"].(string)
	for _, viewer := range []string{a.viewerToken(slug, ""), a.viewerToken(slug, "")} {
		for _, p := range photos {
			expect(t, a.viewer("POST", slug, "/favorite", viewer, map[string]any{"assetId": p, "favorite": true}), 200, "")
		}
		expect(t, a.viewer("POST", slug, "/comment", viewer, map[string]any{"assetId": photos[1], "text": "This one."}), 201, "")
	}
	counts := func(gallery map[string]any) [2]any { return [2]any{gallery["favoriteCount"], gallery["commentsCount"]} }
	want := [2]any{4.0, 2.0}
	if got := counts(a.do("GET", "/v1/galleries/"+g["id"].(string), key, nil).json(t)); got != want {
		t.Errorf("the gallery counts %v, want %v", got, want)
	}
	r := a.do("GET", "/v1/projects/"+project+"/galleries", key, nil)
	expect(t, r, 200, "")
	byTitle := map[string][2]any{}
	for _, it := range r.json(t)["items"].([]any) {
		byTitle[it.(map[string]any)["title"].(string)] = counts(it.(map[string]any))
	}
	if byTitle["Proofs"] != want || byTitle["Quiet"] != [2]any{0.0, 0.0} {
		t.Errorf("the list counts %v", byTitle)
	}
	// A change answers with the counts too.
	r = a.do("PATCH", "/v1/galleries/"+quiet["id"].(string), key, map[string]any{"title": "Still quiet"})
	if got := counts(r.json(t)); got != [2]any{0.0, 0.0} {
		t.Errorf("the patched gallery counts %v", got)
	}
	r = a.do("PATCH", "/v1/galleries/"+g["id"].(string), key, map[string]any{"title": "Proofs, round 1"})
	if got := counts(r.json(t)); got != want {
		t.Errorf("the patched gallery counts %v, want %v", got, want)
	}
}
