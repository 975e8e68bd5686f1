package worker_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"lightbox/store"
	"lightbox/testsupport/testenv"
)

// exiftoolCopy writes a copy of a corpus photo with tags set by exiftool,
// as an editor or Photo Mechanic leaves it, and returns its bytes.
func exiftoolCopy(t *testing.T, name string, tags ...string) []byte {
	t.Helper()
	if _, err := exec.LookPath("exiftool"); err != nil {
		t.Fatal("exiftool is not installed (libimage-exiftool-perl; make test installs it)")
	}
	out := filepath.Join(t.TempDir(), filepath.Base(name))
	// -m: some corpus photos' own packets hold an empty list exiftool
	// would otherwise refuse to edit around.
	args := append([]string{"-q", "-m", "-o", out}, tags...)
	cmd := exec.Command("exiftool", append(args, filepath.Join(testenv.Corpus(t), name))...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("exiftool: %v\n%s", err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A photo culled in another tool arrives with its decisions: the stars,
// colour label, keywords and captions its XMP packet holds become the
// owner's, unless the owner decided otherwise in Lightbox first; an
// ingest that runs again changes nothing.
func TestIngestTakesTheDecisionsOfThePhotosXMP(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ctx := context.Background()
	project := h.project()
	tags := []string{"-XMP-xmp:Rating=4", "-XMP-xmp:Label=Red", "-XMP-dc:Subject=kite", "-XMP-dc:Subject=beach",
		"-XMP-lr:HierarchicalSubject=places|Lisbon", "-XMP-dc:Title=The kite", "-XMP-photoshop:City=Lisbon"}
	ingest := func(data []byte) uuid.UUID {
		asset, _ := h.finalizeWithoutEnqueue(project, data)
		return asset
	}
	fresh := ingest(exiftoolCopy(t, "photos/kite-2560x1600.jpg", tags...))
	// The owner rated this copy in the grid, from its thumbnail, before
	// its ingest ran.
	decided := ingest(append(exiftoolCopy(t, "photos/kite-2560x1600.jpg", tags...), "other"...))
	two := 2
	if _, err := h.env.Store.Rate(ctx, h.owner, store.RatingChange{AssetID: decided, Rating: &two}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // a task may run twice
		h.ingested(project, fresh)
		h.ingested(project, decided)
	}

	rating := func(asset uuid.UUID) *store.Rating {
		var r store.Rating
		if err := h.env.DB.Get(&r, `SELECT * FROM ratings WHERE asset_id = $1 AND user_id = $2`, asset, h.owner); err != nil {
			t.Fatalf("the owner's rating of %s: %v", asset, err)
		}
		return &r
	}
	if r := rating(fresh); r.Rating == nil || *r.Rating != 4 || r.ColorLabel == nil || *r.ColorLabel != "red" || r.Picked || r.Rejected {
		t.Fatalf("the packet's decisions were not taken: %+v", r)
	}
	if r := rating(decided); r.Rating == nil || *r.Rating != 2 || r.ColorLabel != nil {
		t.Fatalf("the owner's own rating was replaced: %+v", r)
	}
	for _, asset := range []uuid.UUID{fresh, decided} {
		a, err := h.env.Store.Asset(ctx, h.owner, asset)
		if err != nil {
			t.Fatal(err)
		}
		kw, iptc := []string(a.Keywords), string(a.IPTC)
		if strings.Join(kw, ",") != "kite,beach,Lisbon" || !strings.Contains(iptc, `"title": "The kite"`) || !strings.Contains(iptc, `"city": "Lisbon"`) {
			t.Fatalf("%s: keywords %v, iptc %s", asset, kw, iptc)
		}
	}
}
