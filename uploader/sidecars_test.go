package uploader_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lib/pq"

	"lightbox/testsupport/procs"
	"lightbox/testsupport/testenv"
	"lightbox/uploader"
)

const sidecarXMP = `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
<rdf:Description rdf:about="" xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/"
 xmp:Rating="3" xmp:Label="Green">
 <dc:subject><rdf:Bag><rdf:li>pier</rdf:li></rdf:Bag></dc:subject>
</rdf:Description></rdf:RDF></x:xmpmeta>`

// A folder's NAME.xmp goes with its photo, and applies once the photo is
// uploaded; a sidecar without a photo is named, and fails nothing.
func TestUploadSendsSidecars(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // bounds a hang only
	defer cancel()
	env := testenv.New(t)
	stack := procs.NewStack(t, env.DSN, env.RedisURL)
	srv := stack.AddServer(nil)
	stack.AddWorker(nil)
	u, err := env.Store.CreateUser(ctx, "ana@example.org", false)
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := env.Store.CreateAPIKey(ctx, u.ID, "test")
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	photo, err := os.ReadFile(filepath.Join(testenv.Corpus(t), "photos/wood.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"IMG.jpg": string(photo), "IMG.xmp": sidecarXMP, "orphan.XMP": sidecarXMP} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu  sync.Mutex
		evs []uploader.Event
	)
	res, err := uploader.Run(ctx, uploader.Options{URL: srv.URL, APIKey: key, NewTitle: "Pier", Paths: []string{dir},
		Report: func(ev uploader.Event) {
			mu.Lock()
			defer mu.Unlock()
			evs = append(evs, ev)
		}})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Counts
	if c.Files != 1 || c.Uploaded != 1 || c.Ignored != 0 || c.SidecarsSent != 1 || c.SidecarsSkipped != 1 || len(res.Failures) != 0 {
		t.Fatalf("counts %+v, failures %v", c, res.Failures)
	}
	if s := res.SidecarsSkipped; len(s) != 1 || filepath.Base(s[0].Path) != "orphan.XMP" || s[0].Message != "no photo" {
		t.Fatalf("skipped sidecars %+v", s)
	}
	var sent []uploader.Event
	for _, ev := range evs {
		if ev.Kind == uploader.EventSidecarSent {
			sent = append(sent, ev)
		}
	}
	if len(sent) != 1 || filepath.Base(sent[0].Path) != "IMG.xmp" || sent[0].AssetID == "" {
		t.Fatalf("sidecar events %+v", sent)
	}

	// Ingest has run (Run waits for it) and the sidecar's decisions stand.
	var got struct {
		Rating   *int           `db:"rating"`
		Label    *string        `db:"color_label"`
		Keywords pq.StringArray `db:"keywords"`
		Files    int            `db:"files"`
	}
	if err := env.DB.GetContext(ctx, &got, `
		SELECT r.rating, r.color_label, a.keywords,
			(SELECT count(*) FROM asset_files f WHERE f.asset_id = a.id AND f.kind = 'xmp_sidecar') AS files
		FROM assets a JOIN projects p ON p.id = a.project_id
		LEFT JOIN ratings r ON r.asset_id = a.id AND r.user_id = p.owner_user_id
		WHERE a.id = $1 AND a.ingested_at IS NOT NULL`, sent[0].AssetID); err != nil {
		t.Fatal(err)
	}
	if got.Rating == nil || *got.Rating != 3 || got.Label == nil || *got.Label != "green" ||
		strings.Join(got.Keywords, ",") != "pier" || got.Files != 1 {
		t.Fatalf("asset after upload: rating %v label %v keywords %v sidecar files %d", got.Rating, got.Label, got.Keywords, got.Files)
	}
}
