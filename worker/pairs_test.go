package worker_test

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/google/uuid"

	"lightbox/render"
	"lightbox/store"
	"lightbox/testsupport/testenv"
)

// rawPlusJPEG is the bytes of a camera's RAW+JPEG shot
// (testenv.RawPlusJPEG).
func rawPlusJPEG(t *testing.T) (raw, jpeg []byte) {
	t.Helper()
	rawPath, jpegPath := testenv.RawPlusJPEG(t, t.TempDir())
	var err error
	if raw, err = os.ReadFile(rawPath); err != nil {
		t.Fatal(err)
	}
	if jpeg, err = os.ReadFile(jpegPath); err != nil {
		t.Fatal(err)
	}
	return raw, jpeg
}

// A camera's RAW+JPEG shot, ingested as it comes, is one photo to cull:
// each half names the other, stars given to the raw are the JPEG's too,
// and an export takes both files, or the raws or JPEGs alone.
func TestRawPlusJPEGIsOnePhotoToCullAndTwoFilesToExport(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ctx := context.Background()
	project := h.project()
	rawData, jpegData := rawPlusJPEG(t)
	raw, _ := h.finalizeNamed(project, "IMG_0042.CRW", rawData)
	// The API records a raw's content type from its name, as the fixture
	// does not.
	h.exec(`UPDATE assets SET content_type = 'image/x-canon-crw' WHERE id = $1`, raw)
	jpeg, _ := h.finalizeNamed(project, "IMG_0042.JPG", jpegData)
	lone := h.ready(project, "photos/wood.jpg")
	h.ingested(project, jpeg)
	h.ingested(project, raw)

	pair := func(id uuid.UUID) *uuid.UUID {
		a, err := h.env.Store.Asset(ctx, h.owner, id)
		if err != nil {
			t.Fatal(err)
		}
		return a.PairAssetID
	}
	if p := pair(raw); p == nil || *p != jpeg {
		t.Fatalf("the raw's pair is %v, want the JPEG %s", p, jpeg)
	}
	if p := pair(jpeg); p == nil || *p != raw {
		t.Fatalf("the JPEG's pair is %v, want the raw %s", p, raw)
	}
	if p := pair(lone); p != nil {
		t.Fatalf("a photo shot alone is paired with %s", *p)
	}

	if _, err := h.env.Store.Rate(ctx, h.owner, store.RatingChange{AssetID: raw, Rating: new(5)}); err != nil {
		t.Fatal(err)
	}
	rs, err := h.env.Store.Ratings(ctx, h.owner, []uuid.UUID{jpeg})
	if err != nil {
		t.Fatal(err)
	}
	if r := rs[jpeg]; r.Rating == nil || *r.Rating != 5 {
		t.Fatalf("the JPEG after starring the raw: %+v, want 5 stars", r)
	}

	for _, c := range []struct {
		pairs string
		want  []string
	}{
		{"", []string{"IMG_0042.CRW", "IMG_0042.JPG", "wood.jpg"}},
		{render.PairsRaw, []string{"IMG_0042.CRW", "wood.jpg"}},
		{render.PairsJPEG, []string{"IMG_0042.JPG", "wood.jpg"}},
	} {
		// The grid's tile for the pair is the raw's: that is what a
		// photographer chooses.
		id, task := h.newExport(project, render.PresetFullRes, render.Settings{IncludeNotReady: true, Pairs: c.pairs}, raw, lone)
		if err := h.runExport(ctx, task); err != nil {
			t.Fatal(err)
		}
		_, names := unzip(t, h.archive(id))
		if !slices.Equal(names, c.want) {
			t.Errorf("pairs %q: the zip holds %v, want %v", c.pairs, names, c.want)
		}
	}
}
