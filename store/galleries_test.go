package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"lightbox/app"
	"lightbox/store"
	"lightbox/tasks"
	"lightbox/testsupport/testenv"
)

// update changes a gallery with the renders it needs, as the server does.
func update(env *testenv.Env, owner, id uuid.UUID, in store.GalleryInput) (*store.GalleryChange, error) {
	return app.ChangeGallery(context.Background(), env.Store, func(tx *store.Store) (*store.GalleryChange, error) {
		return tx.UpdateGallery(context.Background(), owner, id, in)
	})
}

// addAssets adds photos to a gallery with the renders they need.
func addAssets(env *testenv.Env, id uuid.UUID, assets []uuid.UUID) (*store.GalleryChange, error) {
	return app.ChangeGallery(context.Background(), env.Store, func(tx *store.Store) (*store.GalleryChange, error) {
		return tx.AddGalleryAssets(context.Background(), id, assets)
	})
}

// proofs is the mark of a gallery galleryOf made: its title, where and as
// light as a gallery is by default.
var proofs = store.Mark{Text: "Proofs", Position: store.DefaultMarkPosition, Opacity: store.DefaultMarkOpacity}

// galleryOf records a gallery of project holding assets.
func galleryOf(t *testing.T, env *testenv.Env, project uuid.UUID, slug string, watermark bool, assets ...uuid.UUID) *store.GalleryChange {
	t.Helper()
	g := &store.Gallery{ID: uuid.New(), ProjectID: project, Title: "Proofs", Slug: slug, Watermark: watermark}
	ch, err := app.ChangeGallery(context.Background(), env.Store, func(tx *store.Store) (*store.GalleryChange, error) {
		return tx.CreateGallery(context.Background(), g, assets)
	})
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func TestGalleryRendersAreRecordedOnce(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	assets := env.Upload(t, project, testenv.Files(3)...)
	g := galleryOf(t, env, project, "proofs", false, assets[:2]...)
	if g.BatchID != nil || len(g.ToRender) != 0 || g.Gallery.AssetCount != 2 {
		t.Fatalf("a plain gallery: %+v", g)
	}
	if _, err := env.Store.CreateGallery(ctx, &store.Gallery{ID: uuid.New(), ProjectID: project, Title: "T", Slug: "proofs"},
		nil); !errors.Is(err, store.ErrSlugTaken) {
		t.Fatalf("a taken slug: %v", err)
	}

	// Watermark on: one job per photo, in one batch of the owner's.
	on := true
	ch, err := update(env, owner, g.Gallery.ID, store.GalleryInput{Watermark: &on})
	if err != nil || ch.BatchID == nil || len(ch.ToRender) != 2 {
		t.Fatalf("watermark on: %+v, %v", ch, err)
	}
	b, err := env.Store.Batch(ctx, owner, *ch.BatchID)
	if err != nil || b.Kind != "gallery" || b.Total != 2 {
		t.Fatalf("batch %+v, %v", b, err)
	}
	// Jobs still waiting are not recorded again; a new photo is.
	ch, err = addAssets(env, g.Gallery.ID, assets)
	if err != nil || len(ch.ToRender) != 1 || ch.ToRender[0] != assets[2] || ch.Gallery.AssetCount != 3 {
		t.Fatalf("adding a photo: %+v, %v", ch, err)
	}
	// Rendered photos need nothing more. Each render discarded its file
	// before writing it; recording it drops the discard.
	for _, a := range assets {
		key := "galleries/x/" + a.String() + ".jpg"
		if err := env.Store.DiscardAfter(ctx, []string{key}, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := env.Store.SetWatermarkKey(ctx, g.Gallery.ID, a, "galleries/x/"+a.String()+".jpg", proofs); err != nil {
			t.Fatal(err)
		}
	}
	env.FinishJobs(t, project, tasks.TypeGallery)
	if ch, err = update(env, owner, g.Gallery.ID, store.GalleryInput{Watermark: &on}); err != nil || len(ch.ToRender) != 0 {
		t.Fatalf("all rendered: %+v, %v", ch, err)
	}
	var left int
	if err := env.DB.Get(&left, `SELECT count(*) FROM blob_discards`); err != nil || left != 0 {
		t.Fatalf("%d discards left once every render was recorded (%v)", left, err)
	}
	// A second render of a photo already rendered is not recorded.
	if err := env.Store.SetWatermarkKey(ctx, g.Gallery.ID, assets[2], "galleries/x/other.jpg", proofs); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a second render was recorded: %v", err)
	}
	keys, err := env.Store.RemoveGalleryAssets(ctx, g.Gallery.ID, assets[:1])
	if err != nil || len(keys) != 1 || keys[0] != "galleries/x/"+assets[0].String()+".jpg" {
		t.Fatalf("removed keys %v, %v", keys, err)
	}
	if err := env.Store.SetWatermarkKey(ctx, g.Gallery.ID, assets[0], "k", proofs); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a render of a removed photo was recorded: %v", err)
	}
	// Its file is the sweeper's to delete should the caller's delete fail.
	if due, err := env.Store.DueDiscards(ctx, time.Now().Add(time.Minute), 10); err != nil || !slices.Equal(due, keys) {
		t.Fatalf("discards due once the photo was removed: %v, %v; want %v", due, err, keys)
	}
	// Deleting a photo removes its watermarked previews with it.
	deleted, err := env.Store.DeleteAsset(ctx, owner, assets[1], nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(deleted.Keys, "galleries/x/"+assets[1].String()+".jpg") {
		t.Errorf("a deleted photo's keys %v leave out its watermarked preview", deleted.Keys)
	}
	// Another user does not see the gallery.
	stranger, _ := env.Project(t)
	if _, err := env.Store.Gallery(ctx, stranger, g.Gallery.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another user's gallery: %v", err)
	}
	if _, err := update(env, stranger, g.Gallery.ID, store.GalleryInput{Watermark: &on}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another user's patch: %v", err)
	}
	// Deleting the gallery leaves its previews to the sweeper too.
	previews, err := env.Store.DeleteGallery(ctx, owner, g.Gallery.ID)
	if err != nil || len(previews) != 1 {
		t.Fatalf("a deleted gallery's keys: %v, %v", previews, err)
	}
	if due, err := env.Store.DueDiscards(ctx, time.Now().Add(time.Minute), 10); err != nil || !slices.Contains(due, previews[0]) {
		t.Fatalf("discards due once the gallery was deleted: %v, %v; want %v among them", due, err, previews)
	}
}

// A gallery draws its title on its previews, or the text its owner sets;
// a new text, position or opacity makes every preview drawn with the old
// one stale, and a render of the old mark in flight is not recorded.
func TestANewWatermarkMakesThePreviewsStale(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	assets := env.Upload(t, project, testenv.Files(2)...)
	g := galleryOf(t, env, project, "proofs", true, assets...)
	drawn := func() store.Mark {
		t.Helper()
		r, err := env.Store.GalleryRenderItem(ctx, g.Gallery.ID, assets[0])
		if err != nil {
			t.Fatal(err)
		}
		return r.Mark
	}
	text := func() string { return drawn().Text }
	record := func(a uuid.UUID, key string, m store.Mark) error {
		if err := env.Store.DiscardAfter(ctx, []string{key}, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		return env.Store.SetWatermarkKey(ctx, g.Gallery.ID, a, key, m)
	}
	if drawn() != proofs {
		t.Fatalf("drawn %+v, want the title in the corner at 0.3", drawn())
	}
	for _, a := range assets {
		if err := record(a, "galleries/old/"+a.String(), proofs); err != nil {
			t.Fatal(err)
		}
	}
	env.FinishJobs(t, project, tasks.TypeGallery)
	same := "Proofs"
	if ch, err := update(env, owner, g.Gallery.ID, store.GalleryInput{Title: &same}); err != nil || len(ch.Stale) != 0 || len(ch.ToRender) != 0 {
		t.Fatalf("the same title again: %+v, %v", ch, err)
	}

	mark := "© Ana Lima Photography"
	pm := &mark
	ch, err := update(env, owner, g.Gallery.ID, store.GalleryInput{WatermarkText: &pm})
	if err != nil || len(ch.Stale) != 2 || len(ch.ToRender) != 2 || ch.Gallery.WatermarkText == nil || *ch.Gallery.WatermarkText != mark {
		t.Fatalf("a new text: %+v, %v; want both previews stale and drawn again", ch, err)
	}
	if due, err := env.Store.DueDiscards(ctx, time.Now().Add(time.Minute), 10); err != nil || len(due) != 2 {
		t.Fatalf("stale previews due for the sweeper: %v, %v", due, err)
	}
	if text() != mark {
		t.Fatalf("drawn %q, want %q", text(), mark)
	}
	if err := record(assets[0], "galleries/late/"+assets[0].String(), proofs); !errors.Is(err, store.ErrMarkChanged) {
		t.Fatalf("a render of the old text: %v, want ErrMarkChanged", err)
	}
	if err := record(assets[0], "galleries/new/"+assets[0].String(), drawn()); err != nil {
		t.Fatal(err)
	}
	// File names shown change nothing drawn.
	yes := true
	if ch, err = update(env, owner, g.Gallery.ID, store.GalleryInput{ShowFileNames: &yes}); err != nil ||
		len(ch.Stale) != 0 || !ch.Gallery.ShowFileNames {
		t.Fatalf("file names shown: %+v, %v; want nothing stale", ch, err)
	}
	// The centre, or another opacity: stale again, and the old one's
	// render is not recorded.
	center, light := "center", 0.15
	for _, in := range []store.GalleryInput{{WatermarkPosition: &center}, {WatermarkOpacity: &light}} {
		before := drawn()
		env.FinishJobs(t, project, tasks.TypeGallery)
		if ch, err = update(env, owner, g.Gallery.ID, in); err != nil || len(ch.Stale) != 1 || len(ch.ToRender) != 2 {
			t.Fatalf("%+v: %+v, %v; want the drawn preview stale and both to draw", in, ch, err)
		}
		if err := record(assets[0], "galleries/late/"+uuid.NewString(), before); !errors.Is(err, store.ErrMarkChanged) {
			t.Fatalf("a render of %+v after %+v: %v, want ErrMarkChanged", before, in, err)
		}
		if err := record(assets[0], "galleries/new/"+uuid.NewString(), drawn()); err != nil {
			t.Fatal(err)
		}
	}
	if m := drawn(); m.Position != center || m.Opacity != light || m.Text != mark {
		t.Fatalf("drawn %+v", m)
	}
	// Back to the title: stale again.
	var none *string
	if ch, err = update(env, owner, g.Gallery.ID, store.GalleryInput{WatermarkText: &none}); err != nil ||
		len(ch.Stale) != 1 || ch.Gallery.WatermarkText != nil || text() != "Proofs" {
		t.Fatalf("the text cleared: %+v, %v", ch, err)
	}
}

func TestViewersReachOneGalleryUntilThePasswordChanges(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	owner, project := env.Project(t)
	assets := env.Upload(t, project, testenv.Files(2)...)
	g := galleryOf(t, env, project, "first", false, assets[:1]...).Gallery
	other := galleryOf(t, env, project, "second", false, assets...).Gallery

	v, err := env.Store.CreateViewer(ctx, g, []byte("token-1"), 24*time.Hour, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := env.Store.ViewerByToken(ctx, g, []byte("token-1")); err != nil || got.ID != v.ID {
		t.Fatalf("own token: %+v, %v", got, err)
	}
	if _, err := env.Store.ViewerByToken(ctx, other, []byte("token-1")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a token of another gallery: %v", err)
	}

	// Favourites once per viewer; photos outside the gallery are not found.
	for range 2 {
		if n, _, err := env.Store.Favorite(ctx, g.ID, assets[0], v.ID, true, nil); err != nil || n != 1 {
			t.Fatalf("favourite: %d, %v", n, err)
		}
	}
	if _, _, err := env.Store.Favorite(ctx, g.ID, assets[1], v.ID, true, nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("favourite outside the gallery: %v", err)
	}
	if _, n, err := env.Store.AddComment(ctx, g.ID, assets[0], v.ID, "lovely", roomy); err != nil || n != 1 {
		t.Fatalf("comment: %d, %v", n, err)
	}
	if _, _, err := env.Store.AddComment(ctx, g.ID, assets[1], v.ID, "lovely", roomy); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("comment outside the gallery: %v", err)
	}
	items, err := env.Store.GalleryItems(ctx, g.ID, &v.ID)
	if err != nil || len(items) != 1 || items[0].Favorites != 1 || items[0].Comments != 1 || !items[0].Favorited {
		t.Fatalf("items %+v, %v", items, err)
	}

	// A new password ends the token.
	hash := "$argon2id$new"
	hp := &hash
	if _, err := update(env, owner, g.ID, store.GalleryInput{PasswordHash: &hp}); err != nil {
		t.Fatal(err)
	}
	g, _ = env.Store.Gallery(ctx, owner, g.ID)
	if _, err := env.Store.ViewerByToken(ctx, g, []byte("token-1")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a token from before the password changed: %v", err)
	}
}

// roomy caps comments far beyond what a test writes.
var roomy = store.CommentCaps{PerViewer: 100, PerGallery: 100}

// A gallery holds so many live viewers and comments, and a viewer writes so
// many, then refuses more; an expired viewer makes room.
func TestGalleryCapsViewersAndComments(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	_, project := env.Project(t)
	assets := env.Upload(t, project, testenv.Files(1)...)
	g := galleryOf(t, env, project, "proofs", false, assets...).Gallery
	viewer := func(token string, ttl time.Duration) (*store.Viewer, error) {
		return env.Store.CreateViewer(ctx, g, []byte(token), ttl, 2, nil)
	}
	if _, err := viewer("gone", -time.Minute); err != nil {
		t.Fatal(err)
	}
	first, err := viewer("first", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	second, err := viewer("second", 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var full *store.ViewerLimitError
	if _, err := viewer("third", time.Hour); !errors.As(err, &full) || !full.FreeAt.Equal(first.ExpiresAt) {
		t.Fatalf("a third live viewer: %v; want a limit until the first expires (%v)", err, first.ExpiresAt)
	}
	env.Age(t, "gallery_viewers", "expires_at", 0, "id = $1", first.ID)
	if _, err := viewer("third", time.Hour); err != nil {
		t.Fatalf("a viewer once one expired: %v", err)
	}

	caps := store.CommentCaps{PerViewer: 2, PerGallery: 3}
	comment := func(v *store.Viewer) error {
		_, _, err := env.Store.AddComment(ctx, g.ID, assets[0], v.ID, "lovely", caps)
		return err
	}
	for range 2 {
		if err := comment(second); err != nil {
			t.Fatal(err)
		}
	}
	if err := comment(second); !errors.Is(err, store.ErrViewerComments) {
		t.Fatalf("a viewer's third comment: %v", err)
	}
	if err := comment(first); err != nil {
		t.Fatal(err)
	}
	if err := comment(first); !errors.Is(err, store.ErrGalleryComments) {
		t.Fatalf("the gallery's fourth comment: %v", err)
	}
	// The owner reads them a page at a time, oldest first.
	var read []store.Comment
	var after *store.Cursor
	for pages := 0; ; pages++ {
		p, err := env.Store.GalleryComments(ctx, g.ID, after, 2)
		if err != nil || pages > 2 {
			t.Fatalf("page %d: %v", pages, err)
		}
		read = append(read, p.Items...)
		if after = p.Next; after == nil {
			break
		}
	}
	if len(read) != 3 || *read[0].ViewerID != second.ID || *read[2].ViewerID != first.ID {
		t.Fatalf("comments read %+v", read)
	}
}

// Expired viewers go with the purge unless they left favourites, which the
// owner still reads; comments outlive their viewer.
func TestPurgeEndsExpiredViewersWithoutFavourites(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	_, project := env.Project(t)
	assets := env.Upload(t, project, testenv.Files(1)...)
	g := galleryOf(t, env, project, "proofs", false, assets...).Gallery
	viewer := func(token string, ttl time.Duration) uuid.UUID {
		v, err := env.Store.CreateViewer(ctx, g, []byte(token), ttl, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		return v.ID
	}
	live, commented, favoured := viewer("live", time.Hour), viewer("commented", -time.Hour), viewer("favoured", -time.Hour)
	if _, _, err := env.Store.AddComment(ctx, g.ID, assets[0], commented, "lovely", roomy); err != nil {
		t.Fatal(err)
	}
	if _, _, err := env.Store.Favorite(ctx, g.ID, assets[0], favoured, true, nil); err != nil {
		t.Fatal(err)
	}
	p, err := env.Store.PurgeExpired(ctx)
	if err != nil || p.Viewers != 1 {
		t.Fatalf("purged %+v, %v; want one viewer", p, err)
	}
	var left []uuid.UUID
	env.DB.Select(&left, `SELECT id FROM gallery_viewers ORDER BY created_at`)
	if len(left) != 2 || !slices.Contains(left, live) || !slices.Contains(left, favoured) {
		t.Fatalf("viewers left %v, want the live and the favouring one", left)
	}
	items, err := env.Store.GalleryItems(ctx, g.ID, nil)
	if err != nil || len(items) != 1 || items[0].Favorites != 1 || items[0].Comments != 1 {
		t.Fatalf("items %+v, %v", items, err)
	}
}

// TestWatermarkRecordedDuringADeleteIsDiscarded records a photo's
// watermarked preview in a transaction held open while its gallery, or the
// photo, is deleted: once both commit, the file is either among the keys
// the delete returned and discarded, or still its render's own discard.
// Recording it drops the render's discard, so a delete that read the
// photo's row before the recording committed would leave the file to no
// one.
func TestWatermarkRecordedDuringADeleteIsDiscarded(t *testing.T) {
	for _, c := range []string{"gallery", "asset"} {
		t.Run(c, func(t *testing.T) {
			env := testenv.New(t)
			ctx := context.Background()
			owner, project := env.Project(t)
			assets := env.Upload(t, project, testenv.Files(1)...)
			g := galleryOf(t, env, project, "proofs-"+c, true, assets...)
			key := "galleries/" + g.Gallery.ID.String() + "/" + assets[0].String() + "-run.jpg"
			if err := env.Store.DiscardAfter(ctx, []string{key}, time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}

			recorded, commit := make(chan int, 1), make(chan struct{})
			recordErr := make(chan error, 1)
			go func() {
				recordErr <- env.Store.WithTx(ctx, func(tx *store.Store) error {
					if err := tx.SetWatermarkKey(ctx, g.Gallery.ID, assets[0], key, proofs); err != nil {
						return err
					}
					// The one backend writing this test's gallery_assets.
					pid, err := writer(env, "gallery_assets")
					if err != nil {
						return err
					}
					recorded <- pid
					<-commit
					return nil
				})
			}()
			var holder int
			select {
			case holder = <-recorded:
			case err := <-recordErr:
				t.Fatalf("recording the preview: %v", err)
			case <-time.After(time.Minute):
				t.Fatal("timed out recording the preview")
			}

			type deleted struct {
				keys []string
				err  error
			}
			done := make(chan deleted, 1)
			go func() {
				var d deleted
				if c == "gallery" {
					d.keys, d.err = env.Store.DeleteGallery(ctx, owner, g.Gallery.ID)
				} else {
					var gone *store.DeletedAsset
					if gone, d.err = env.Store.DeleteAsset(ctx, owner, assets[0], nil, time.Now()); d.err == nil {
						d.keys = gone.Keys
					}
				}
				done <- d
			}()
			// The delete waits on the photo's row, which the recording holds.
			testenv.Eventually(t, "the delete to wait on the recording", time.Minute, func() bool {
				var waiting int
				if err := env.DB.Get(&waiting, `SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, holder); err != nil {
					t.Fatal(err)
				}
				if waiting > 0 {
					return true
				}
				select {
				case d := <-done:
					t.Fatalf("the delete did not wait for the recording: %v %v", d.keys, d.err)
				default:
				}
				return false
			})
			close(commit)
			if err := <-recordErr; err != nil {
				t.Fatal(err)
			}
			d := <-done
			if d.err != nil {
				t.Fatal(d.err)
			}
			var discarded int
			if err := env.DB.Get(&discarded, `SELECT count(*) FROM blob_discards WHERE blob_key = $1`, key); err != nil {
				t.Fatal(err)
			}
			if discarded == 0 {
				t.Errorf("the preview recorded during the delete is no discard (the delete returned %v): nothing deletes it", d.keys)
			}
		})
	}
}
