package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/embedding"
	"lightbox/store"
	"lightbox/testsupport/testenv"
)

// clipProvider is a small CLIP-style provider: an image's vector is its
// mean colour, and a colour's name has the vector of that colour. mode
// makes it misbehave: "500", "short" (a vector of the wrong length) or
// "hang" (no answer until the caller gives up).
type clipProvider struct {
	*httptest.Server
	mode  atomic.Value
	texts atomic.Int64
}

var colourWords = map[string][]float32{
	"red":   {1, 0.3, 0},
	"green": {0.2, 1, 0},
	"blue":  {0, 0, 1},
}

func newClipProvider(t *testing.T) *clipProvider {
	p := &clipProvider{}
	p.mode.Store("")
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Model, Image, Text string }
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != testEmbedModel || (req.Image == "") == (req.Text == "") {
			http.Error(w, "want {model, image} or {model, text}", http.StatusBadRequest)
			return
		}
		var vec []float32
		if req.Text != "" {
			p.texts.Add(1)
			switch p.mode.Load() {
			case "500":
				http.Error(w, "model not loaded", http.StatusInternalServerError)
				return
			case "short":
				vec = []float32{1, 0}
			case "hang":
				<-r.Context().Done()
				return
			default:
				vec = colourWords[strings.ToLower(req.Text)]
				if vec == nil {
					vec = []float32{1, 1, 1}
				}
			}
		} else {
			raw, _ := base64.StdEncoding.DecodeString(req.Image)
			img, err := jpeg.Decode(bytes.NewReader(raw))
			if err != nil {
				http.Error(w, "image is not a JPEG", http.StatusBadRequest)
				return
			}
			vec = meanColour(img)
		}
		json.NewEncoder(w).Encode(map[string]any{"embedding": vec})
	}))
	t.Cleanup(p.Close)
	return p
}

func meanColour(img image.Image) []float32 {
	var sum [3]float32
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			sum[0] += float32(r)
			sum[1] += float32(g)
			sum[2] += float32(bl)
		}
	}
	return sum[:]
}

func (p *clipProvider) embedder(t *testing.T, timeout time.Duration) *embedding.HTTP {
	h, err := embedding.NewHTTP(embedding.HTTPConfig{URL: p.URL, Model: testEmbedModel, Dim: 3, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func solid(t *testing.T, name string, c color.RGBA) photo {
	img := image.NewRGBA(image.Rect(0, 0, 64, 48))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, 255
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, nil); err != nil {
		t.Fatal(err)
	}
	return photo{name: name, data: buf.Bytes()}
}

// colourPhotos uploads a blue photo named red-barn.jpg, a red poppy and a
// green field, and embeds them through the provider as the worker does.
func colourPhotos(t *testing.T, a *app, key, project string, e embedding.Embedder) map[string]string {
	ps := []photo{
		solid(t, "red-barn.jpg", color.RGBA{20, 20, 220, 255}),
		solid(t, "poppy.jpg", color.RGBA{220, 20, 20, 255}),
		solid(t, "field.jpg", color.RGBA{20, 200, 20, 255}),
	}
	_, ups := a.uploadAll(key, project, ps)
	ctx := context.Background()
	names := map[string]string{}
	for i, u := range ups {
		id := uuid.MustParse(u.AssetID)
		names[u.AssetID] = ps[i].name
		if err := a.env.Store.SaveIngest(ctx, store.IngestOutput{AssetID: id, Width: 64, Height: 48,
			CameraMake: "Canon", CameraModel: "EOS R6", EXIF: json.RawMessage(`{}`), Quality: json.RawMessage(`{}`),
			PHash: uint64(i), HashAlgorithm: "test"}); err != nil {
			t.Fatal(err)
		}
		img, err := jpeg.Decode(bytes.NewReader(ps[i].data))
		if err != nil {
			t.Fatal(err)
		}
		vec, err := e.Embed(ctx, img)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.env.Store.SaveEmbedding(ctx, id, testEmbedModel, vec); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// searchOrder runs a search and returns the file names in the order the
// user sees them, each with its highlights, and whether it was semantic.
func searchOrder(t *testing.T, a *app, key, project, q string, names map[string]string) (string, bool) {
	t.Helper()
	r := a.do("GET", "/v1/projects/"+project+"/search?q="+q, key, nil)
	expect(t, r, 200, "")
	var res struct {
		Results []struct {
			AssetID    string
			Highlights []string
		}
		Semantic *bool
	}
	if err := json.Unmarshal(r.body, &res); err != nil || res.Semantic == nil {
		t.Fatalf("search %q: %s", q, r.body)
	}
	var out []string
	for _, h := range res.Results {
		out = append(out, fmt.Sprintf("%s[%s]", names[h.AssetID], strings.Join(h.Highlights, ",")))
	}
	return strings.Join(out, " "), *res.Semantic
}

func TestSearchRanksByTheProvidersTextVector(t *testing.T) {
	t.Parallel()
	p := newClipProvider(t)
	logs := &testenv.LockedBuffer{}
	env := testenv.New(t)
	a := startAppWith(t, env, env.Redis, options{texts: p.embedder(t, 0), logTo: logs})
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	names := colourPhotos(t, a, key, project, p.embedder(t, 0))

	for _, tc := range []struct{ q, want string }{
		// Found by its name and, last, by its colour: both rankings beat
		// the red photo the words do not name.
		{"red", "red-barn.jpg[filename,embedding] poppy.jpg[embedding] field.jpg[embedding]"},
		// No word matches: the nearest photos, best first.
		{"green", "field.jpg[embedding] poppy.jpg[embedding] red-barn.jpg[embedding]"},
	} {
		if got, semantic := searchOrder(t, a, key, project, tc.q, names); got != tc.want || !semantic {
			t.Errorf("search %q: got %s (semantic %v), want %s", tc.q, got, semantic, tc.want)
		}
	}

	// A provider that fails leaves the words: the same answer as a server
	// without a text side, marked as such, and a line in the log.
	plain := startAppWith(t, env, env.Redis, options{})
	want, semantic := searchOrder(t, plain, key, project, "red", names)
	if want != "red-barn.jpg[filename]" || semantic {
		t.Fatalf("plain search: %s (semantic %v)", want, semantic)
	}
	for _, mode := range []string{"500", "short"} {
		p.mode.Store(mode)
		if got, semantic := searchOrder(t, a, key, project, "red", names); got != want || semantic {
			t.Errorf("provider %s: got %s (semantic %v), want %s", mode, got, semantic, want)
		}
	}
	if n := strings.Count(logs.String(), "search falls back to words only"); n != 2 {
		t.Errorf("%d fallback lines in the log, want 2:\n%s", n, logs.String())
	}

	// A provider that never answers is given up on; the timeout only
	// bounds the wait, the answer does not depend on it.
	p.mode.Store("hang")
	slow := startAppWith(t, env, env.Redis, options{texts: p.embedder(t, 200*time.Millisecond)})
	if got, semantic := searchOrder(t, slow, key, project, "red", names); got != want || semantic {
		t.Errorf("provider hangs: got %s (semantic %v), want %s", got, semantic, want)
	}
}

func TestSearchWithFilters(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	ids := processed(t, a, key, project, []string{"Canon", "Nikon", "Canon"}, [][]float32{{1, 0}, {0, 1}, {1, 1}})
	expect(t, a.do("POST", "/v1/assets/"+ids[0].String()+"/ratings", key, map[string]any{"picked": true, "rating": 5}), 200, "")
	expect(t, a.do("POST", "/v1/assets/"+ids[2].String()+"/ratings", key, map[string]any{"rejected": true, "rating": 2}), 200, "")
	search := func(body any) string {
		t.Helper()
		r := a.do("POST", "/v1/projects/"+project+"/search", key, body)
		expect(t, r, 200, "")
		out := decode[struct{ Results []struct{ AssetID string } }](t, r)
		var got []string
		for _, h := range out.Results {
			for i, id := range ids {
				if h.AssetID == id.String() {
					got = append(got, fmt.Sprint(i))
				}
			}
		}
		return strings.Join(got, ",")
	}
	// Captured a minute apart: 14:00, 14:01, 14:02 on 2026-06-21.
	for _, c := range []struct {
		body any
		want string
	}{
		{map[string]any{"q": "canon"}, "2,0"}, // equal ranks: newest capture first
		{map[string]any{"q": "canon", "filters": map[string]any{"picked": true}}, "0"},
		{map[string]any{"q": "canon", "filters": map[string]any{"rejected": false}}, "0"},
		{map[string]any{"filters": map[string]any{"ratingMin": 2}}, "2,0"},
		{map[string]any{"filters": map[string]any{"camera": "nik"}}, "1"},
		{map[string]any{"filters": map[string]any{"camera": "%"}}, ""},
		{map[string]any{"filters": map[string]any{"from": "2026-06-21T14:00:30Z", "to": "2026-06-21T14:01:30Z"}}, "1"},
		{map[string]any{"filters": map[string]any{"readiness": []string{"cull"}}}, ""},
		{map[string]any{}, "2,1,0"},
	} {
		if got := search(c.body); got != c.want {
			t.Errorf("%v: assets %q, want %q", c.body, got, c.want)
		}
	}
	for _, body := range []any{
		map[string]any{"filters": map[string]any{"ratingMin": 9}},
		map[string]any{"filters": map[string]any{"readiness": []string{"failed"}}},
		map[string]any{"filters": map[string]any{"from": "2026-06-22T00:00:00Z", "to": "2026-06-21T00:00:00Z"}},
		map[string]any{"q": strings.Repeat("q", 501)},
		map[string]any{"limit": 0},
	} {
		expect(t, a.do("POST", "/v1/projects/"+project+"/search", key, body), 400, "validation_failed")
	}
	expect(t, a.do("POST", "/v1/projects/"+project+"/search", key, map[string]any{"filters": map[string]any{"stars": 1}}), 400, "invalid_json")
	bob := a.user("bob@example.org", false)
	expect(t, a.do("POST", "/v1/projects/"+project+"/search", bob, map[string]any{}), 404, "not_found")
}
