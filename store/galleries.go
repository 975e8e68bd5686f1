package store

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/lib/pq"
)

// ErrSlugTaken says another gallery has the slug asked for.
var ErrSlugTaken = errors.New("store: the slug is taken")

// Gallery is a set of a project's photos shown to clients at a public slug.
type Gallery struct {
	ID             uuid.UUID  `db:"id"`
	ProjectID      uuid.UUID  `db:"project_id"`
	OwnerUserID    uuid.UUID  `db:"owner_user_id"`
	Title          string     `db:"title"`
	Slug           string     `db:"slug"`
	PasswordHash   *string    `db:"password_hash"`
	AuthVersion    int        `db:"auth_version"`
	ExpiresAt      *time.Time `db:"expires_at"`
	Watermark      bool       `db:"watermark"`
	WatermarkText  *string    `db:"watermark_text"` // nil draws the title
	AllowDownloads bool       `db:"allow_downloads"`
	SelectionLimit *int       `db:"selection_limit"` // how many photos one visitor may choose; nil for no limit
	ShowFileNames  bool       `db:"show_file_names"` // clients see each photo's file name
	// Where the watermark goes ("corner" or "center") and its ink's
	// opacity, 0.05 to 1; CreateGallery takes zero for the defaults.
	WatermarkPosition string  `db:"watermark_position"`
	WatermarkOpacity  float64 `db:"watermark_opacity"`
	AssetCount        int     `db:"asset_count"`
	// What viewers left, for the owner's answers (zero in the public ones).
	FavoriteCount int       `db:"favorite_count"`
	CommentsCount int       `db:"comments_count"`
	CreatedAt     time.Time `db:"created_at"`
	UpdatedAt     time.Time `db:"updated_at"`
}

// Expired reports whether the gallery's expiry has passed at now.
func (g *Gallery) Expired(now time.Time) bool { return g.ExpiresAt != nil && !now.Before(*g.ExpiresAt) }

// The watermark of a gallery created without a position or an opacity,
// as the migration that added them gave the galleries before.
const (
	DefaultMarkPosition = "corner"
	DefaultMarkOpacity  = 0.3
)

// Mark is what a gallery's watermarked previews show, and how: a change
// of any of it draws them again.
type Mark struct {
	Text     string  `db:"text"` // the gallery's watermark text, or its title
	Position string  `db:"position"`
	Opacity  float64 `db:"opacity"`
}

// markColumns is the SQL of g's Mark.
const markColumns = `coalesce(g.watermark_text, g.title) AS text, g.watermark_position AS position, g.watermark_opacity AS opacity`

const galleryColumns = `
	SELECT g.id, g.project_id, p.owner_user_id, g.title, g.slug, g.password_hash, g.auth_version, g.expires_at,
	       g.watermark, g.watermark_text, g.allow_downloads, g.selection_limit, g.show_file_names,
	       g.watermark_position, g.watermark_opacity, g.created_at, g.updated_at,
	       (SELECT count(*) FROM gallery_assets ga WHERE ga.gallery_id = g.id) AS asset_count`

const galleryFrom = `
	FROM galleries g JOIN projects p ON p.id = g.project_id`

// gallerySelect reads a gallery for its public pages.
const gallerySelect = galleryColumns + galleryFrom

// ownerGallerySelect reads a gallery for its owner, with the favourites
// and comments its viewers left: both counted on their tables' indexes,
// and capped per gallery (see CommentCaps).
const ownerGallerySelect = galleryColumns + `,
	       (SELECT count(*) FROM gallery_favorites f WHERE f.gallery_id = g.id) AS favorite_count,
	       (SELECT count(*) FROM gallery_comments c WHERE c.gallery_id = g.id) AS comments_count` + galleryFrom

// GalleryInput holds the fields a PATCH may change. Nil leaves a field
// alone; a nil inner pointer clears it.
type GalleryInput struct {
	Title          *string
	PasswordHash   **string
	ExpiresAt      **time.Time
	Watermark      *bool
	WatermarkText  **string
	AllowDownloads *bool
	SelectionLimit **int
	ShowFileNames  *bool
	// A position or an opacity draws every watermarked preview again, as a
	// text does.
	WatermarkPosition *string
	WatermarkOpacity  *float64
}

// GalleryChange is a gallery after a change, with the photos that need a
// watermarked preview made (none unless it is watermarked) and the keys of
// the watermarked previews it made stale, which are discards.
type GalleryChange struct {
	Gallery  *Gallery
	ToRender []uuid.UUID
	Stale    []string
	// BatchID is the batch of the renders the change started, once the
	// caller has recorded them (jobs.RenderGallery).
	BatchID *uuid.UUID
}

// CreateGallery records g in its project with assets, and says which of
// them a watermarked gallery needs rendered. A slug another gallery has
// is ErrSlugTaken.
func (s *Store) CreateGallery(ctx context.Context, g *Gallery, assets []uuid.UUID) (*GalleryChange, error) {
	var out *GalleryChange
	err := s.WithTx(ctx, func(tx *Store) error {
		_, err := tx.db.ExecContext(ctx, `
			INSERT INTO galleries (id, project_id, title, slug, password_hash, expires_at, watermark, watermark_text, allow_downloads,
				selection_limit, show_file_names, watermark_position, watermark_opacity)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			g.ID, g.ProjectID, g.Title, g.Slug, g.PasswordHash, g.ExpiresAt, g.Watermark, g.WatermarkText, g.AllowDownloads,
			g.SelectionLimit, g.ShowFileNames, cmp.Or(g.WatermarkPosition, DefaultMarkPosition), cmp.Or(g.WatermarkOpacity, DefaultMarkOpacity))
		var pqErr *pq.Error
		if errors.As(err, &pqErr) && pqErr.Code == "23505" {
			return ErrSlugTaken
		}
		if err != nil {
			return err
		}
		if err := tx.addGalleryAssets(ctx, g.ID, assets); err != nil {
			return err
		}
		out, err = tx.galleryRenders(ctx, g.ID)
		return err
	})
	return out, err
}

// Gallery returns owner's gallery id.
func (s *Store) Gallery(ctx context.Context, owner, id uuid.UUID) (*Gallery, error) {
	g := &Gallery{}
	err := s.db.GetContext(ctx, g, ownerGallerySelect+` WHERE g.id = $1 AND p.owner_user_id = $2`, id, owner)
	return g, notFound(err)
}

// Galleries lists a project's galleries, newest first.
func (s *Store) Galleries(ctx context.Context, project uuid.UUID, after *Cursor, limit int) (Page[Gallery], error) {
	var rows []Gallery
	afterTime, afterID := time.Now().Add(time.Hour), uuid.Max
	if after != nil {
		afterTime, afterID = after.Time, after.ID
	}
	err := s.db.SelectContext(ctx, &rows, ownerGallerySelect+` WHERE g.project_id = $1 AND (g.created_at, g.id) < ($2, $3)
		ORDER BY g.created_at DESC, g.id DESC LIMIT $4`, project, afterTime, afterID, limit+1)
	if err != nil {
		return Page[Gallery]{}, err
	}
	return pageOf(rows, limit, func(g Gallery) Cursor { return Cursor{Time: g.CreatedAt, ID: g.ID} }), nil
}

// DeleteGallery removes owner's gallery id with its photos list, viewers,
// favourites and comments, and returns the keys of its watermarked
// previews, which nothing needs any more. They are discards too, so the
// sweeper deletes any the caller's delete misses (no render writes a key
// twice, so none comes back into use).
func (s *Store) DeleteGallery(ctx context.Context, owner, id uuid.UUID) ([]string, error) {
	var keys []string
	err := s.WithTx(ctx, func(tx *Store) error {
		var gone []uuid.UUID
		if err := tx.db.SelectContext(ctx, &gone, `SELECT g.id FROM galleries g JOIN projects p ON p.id = g.project_id
			WHERE g.id = $1 AND p.owner_user_id = $2 FOR UPDATE OF g`, id, owner); err != nil {
			return err
		}
		if len(gone) == 0 {
			return ErrNotFound
		}
		// Deleted here, not by the cascade, so a render recording its
		// preview meanwhile is waited for and its key read, or finds the
		// photo gone: read before, that key would be no discard any more.
		if err := tx.db.SelectContext(ctx, &keys, `
			WITH gone AS (DELETE FROM gallery_assets WHERE gallery_id = $1 RETURNING watermark_key)
			SELECT watermark_key FROM gone WHERE watermark_key IS NOT NULL`, id); err != nil {
			return err
		}
		if err := tx.DiscardAfter(ctx, keys, time.Now()); err != nil {
			return err
		}
		_, err := tx.db.ExecContext(ctx, `DELETE FROM galleries WHERE id = $1`, id)
		return err
	})
	return keys, err
}

// GalleryBySlug returns the gallery at slug, for its public pages. A
// deleted project's galleries are not found, as an unknown slug is: its
// owner believes them gone, and the answer tells no one they existed.
func (s *Store) GalleryBySlug(ctx context.Context, slug string) (*Gallery, error) {
	g := &Gallery{}
	err := s.db.GetContext(ctx, g, gallerySelect+` WHERE g.slug = $1 AND p.status <> 'deleted'`, slug)
	return g, notFound(err)
}

// UpdateGallery changes owner's gallery id. A new or removed password ends
// every viewer token given before; a new Mark (text, position or opacity)
// makes every watermarked preview stale (discarded, and named in the
// change); turning the watermark on, or a new Mark while it is on, names
// the photos that have no watermarked preview, to be rendered.
func (s *Store) UpdateGallery(ctx context.Context, owner, id uuid.UUID, in GalleryInput) (*GalleryChange, error) {
	var out *GalleryChange
	err := s.WithTx(ctx, func(tx *Store) error {
		var before Mark
		err := tx.db.GetContext(ctx, &before, `SELECT `+markColumns+` FROM galleries g JOIN projects p ON p.id = g.project_id
			WHERE g.id = $1 AND p.owner_user_id = $2 FOR UPDATE OF g`, id, owner)
		if err != nil {
			return notFound(err)
		}
		var hash, expires, text, limit any
		setHash, setExpires, setText, setLimit := in.PasswordHash != nil, in.ExpiresAt != nil, in.WatermarkText != nil, in.SelectionLimit != nil
		if setLimit {
			limit = *in.SelectionLimit
		}
		if setHash {
			hash = *in.PasswordHash
		}
		if setExpires {
			expires = *in.ExpiresAt
		}
		if setText {
			text = *in.WatermarkText
		}
		var after Mark
		err = tx.db.GetContext(ctx, &after, `UPDATE galleries g SET
				title = coalesce($2, title),
				password_hash = CASE WHEN $3 THEN $4 ELSE password_hash END,
				auth_version = auth_version + CASE WHEN $3 THEN 1 ELSE 0 END,
				expires_at = CASE WHEN $5 THEN $6::timestamptz ELSE expires_at END,
				watermark = coalesce($7, watermark),
				allow_downloads = coalesce($8, allow_downloads),
				watermark_text = CASE WHEN $9 THEN $10::text ELSE watermark_text END,
				selection_limit = CASE WHEN $11 THEN $12::int ELSE selection_limit END,
				show_file_names = coalesce($13, show_file_names),
				watermark_position = coalesce($14, watermark_position),
				watermark_opacity = coalesce($15, watermark_opacity),
				updated_at = now()
			WHERE id = $1 RETURNING `+markColumns, id, in.Title, setHash, hash, setExpires, expires, in.Watermark, in.AllowDownloads, setText, text,
			setLimit, limit, in.ShowFileNames, in.WatermarkPosition, in.WatermarkOpacity)
		if err != nil {
			return err
		}
		var stale []string
		if after != before {
			if stale, err = tx.staleWatermarks(ctx, id); err != nil {
				return err
			}
		}
		out, err = tx.galleryRenders(ctx, id)
		if out != nil {
			out.Stale = stale
		}
		return err
	})
	return out, err
}

// RedrawAsset forgets the watermarked previews of asset, drawn from a look
// it no longer has (a newer edit was rendered), in every gallery holding
// it, and says for each which to draw again. The stale keys are discards:
// the caller deletes them, or else the sweeper does.
func (s *Store) RedrawAsset(ctx context.Context, asset uuid.UUID) ([]*GalleryChange, error) {
	var out []*GalleryChange
	err := s.WithTx(ctx, func(tx *Store) error {
		var stale []struct {
			Gallery uuid.UUID `db:"gallery_id"`
			Key     string    `db:"watermark_key"`
		}
		if err := tx.db.SelectContext(ctx, &stale, `
			UPDATE gallery_assets ga SET watermark_key = NULL
			FROM (SELECT gallery_id, watermark_key FROM gallery_assets
			      WHERE asset_id = $1 AND watermark_key IS NOT NULL FOR UPDATE) old
			WHERE ga.asset_id = $1 AND ga.gallery_id = old.gallery_id
			RETURNING ga.gallery_id, old.watermark_key`, asset); err != nil {
			return err
		}
		for _, st := range stale {
			ch, err := tx.galleryRenders(ctx, st.Gallery)
			if err != nil {
				return err
			}
			ch.Stale = []string{st.Key}
			out = append(out, ch)
			if err := tx.DiscardAfter(ctx, ch.Stale, time.Now()); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// staleWatermarks forgets the watermarked previews of gallery, drawn with
// a Mark it no longer has, and returns their keys, discarded: the caller
// deletes them, or else the sweeper does.
func (s *Store) staleWatermarks(ctx context.Context, gallery uuid.UUID) ([]string, error) {
	var keys []string
	if err := s.db.SelectContext(ctx, &keys, `
		UPDATE gallery_assets ga SET watermark_key = NULL
		FROM (SELECT asset_id, watermark_key FROM gallery_assets
		      WHERE gallery_id = $1 AND watermark_key IS NOT NULL FOR UPDATE) old
		WHERE ga.gallery_id = $1 AND ga.asset_id = old.asset_id
		RETURNING old.watermark_key`, gallery); err != nil {
		return nil, err
	}
	return keys, s.DiscardAfter(ctx, keys, time.Now())
}

// AddGalleryAssets adds assets of the gallery's project to it (those it
// has already stay as they are) and, when it is watermarked, names those
// without a watermarked preview, to be rendered.
func (s *Store) AddGalleryAssets(ctx context.Context, id uuid.UUID, assets []uuid.UUID) (*GalleryChange, error) {
	var out *GalleryChange
	err := s.WithTx(ctx, func(tx *Store) error {
		if err := tx.addGalleryAssets(ctx, id, assets); err != nil {
			return err
		}
		var err error
		out, err = tx.galleryRenders(ctx, id)
		return err
	})
	return out, err
}

// RemoveGalleryAssets takes assets out of the gallery, with their
// favourites and comments there, and returns the keys of the watermarked
// previews no longer wanted, which are discards too (see DeleteGallery).
func (s *Store) RemoveGalleryAssets(ctx context.Context, id uuid.UUID, assets []uuid.UUID) ([]string, error) {
	var keys []string
	err := s.WithTx(ctx, func(tx *Store) error {
		// The gallery's row first, as addGalleryAssets takes it.
		if _, err := tx.db.ExecContext(ctx, `UPDATE galleries SET updated_at = now() WHERE id = $1`, id); err != nil {
			return err
		}
		if err := tx.db.SelectContext(ctx, &keys, `
			WITH gone AS (DELETE FROM gallery_assets WHERE gallery_id = $1 AND asset_id = ANY($2) RETURNING watermark_key)
			SELECT watermark_key FROM gone WHERE watermark_key IS NOT NULL`, id, pq.Array(assets)); err != nil {
			return err
		}
		return tx.DiscardAfter(ctx, keys, time.Now())
	})
	return keys, err
}

func (s *Store) addGalleryAssets(ctx context.Context, id uuid.UUID, assets []uuid.UUID) error {
	if len(assets) == 0 {
		return nil
	}
	// The gallery's row first: changes to one gallery take their turns
	// instead of locking its photos in each request's order (deadlock).
	if _, err := s.db.ExecContext(ctx, `UPDATE galleries SET updated_at = now() WHERE id = $1`, id); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, `
		INSERT INTO gallery_assets (gallery_id, asset_id)
		SELECT $1, u.id FROM unnest($2::uuid[]) WITH ORDINALITY AS u(id, n) ORDER BY u.n
		ON CONFLICT DO NOTHING`, id, pq.Array(assets))
	return err
}

// galleryRenders reads the gallery after a change and, when it is
// watermarked, the photos that have no watermarked preview and no render
// job waiting or running.
func (s *Store) galleryRenders(ctx context.Context, id uuid.UUID) (*GalleryChange, error) {
	g := &Gallery{}
	if err := s.db.GetContext(ctx, g, ownerGallerySelect+` WHERE g.id = $1`, id); err != nil {
		return nil, err
	}
	out := &GalleryChange{Gallery: g}
	if !g.Watermark {
		return out, nil
	}
	err := s.db.SelectContext(ctx, &out.ToRender, `
		SELECT ga.asset_id FROM gallery_assets ga
		WHERE ga.gallery_id = $1 AND ga.watermark_key IS NULL
		  AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.asset_id = ga.asset_id AND j.type = 'gallery:render'
		                  AND j.status IN ('queued', 'running') AND j.payload->>'galleryId' = $1::text)
		ORDER BY ga.seq`, id)
	return out, err
}

// GalleryRender is what gallery:render needs to know of one photo in a
// gallery.
type GalleryRender struct {
	Mark                // to draw
	Watermark   bool    `db:"watermark"`
	AssetStatus string  `db:"asset_status"`
	Rendered    *string `db:"watermark_key"`
}

// GalleryRenderItem returns what gallery:render needs for asset in
// gallery; ErrNotFound when the asset is no longer in it.
func (s *Store) GalleryRenderItem(ctx context.Context, gallery, asset uuid.UUID) (*GalleryRender, error) {
	r := &GalleryRender{}
	err := s.db.GetContext(ctx, r, `
		SELECT g.watermark, `+markColumns+`, a.status AS asset_status, ga.watermark_key
		FROM gallery_assets ga
		JOIN galleries g ON g.id = ga.gallery_id
		JOIN assets a ON a.id = ga.asset_id
		WHERE ga.gallery_id = $1 AND ga.asset_id = $2`, gallery, asset)
	return r, notFound(err)
}

// ErrMarkChanged says the gallery's watermark (its text, position or
// opacity) changed while a preview was drawn with the one before.
var ErrMarkChanged = errors.New("store: the gallery's watermark changed")

// SetWatermarkKey records the watermarked preview of asset in gallery,
// drawn with mark, which its render discarded before writing it (see
// DiscardAfter): the discard goes in the same transaction. ErrNotFound
// when the photo is no longer in the gallery or another render is
// recorded, ErrMarkChanged when the gallery draws another mark now,
// ErrDiscardDue when the sweeper may be deleting the file; the discard
// then stays.
func (s *Store) SetWatermarkKey(ctx context.Context, gallery, asset uuid.UUID, key string, mark Mark) error {
	return s.WithTx(ctx, func(tx *Store) error {
		var current Mark
		// The gallery's row first, as a change of its mark takes it.
		if err := tx.db.GetContext(ctx, &current, `SELECT `+markColumns+` FROM galleries g WHERE g.id = $1 FOR SHARE`, gallery); err != nil {
			return notFound(err)
		}
		if current != mark {
			return ErrMarkChanged
		}
		res, err := tx.db.ExecContext(ctx, `UPDATE gallery_assets SET watermark_key = $3
			WHERE gallery_id = $1 AND asset_id = $2 AND watermark_key IS NULL`, gallery, asset, key)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		return tx.claimDiscard(ctx, key)
	})
}

// Viewer is one holder of a gallery's viewer token.
type Viewer struct {
	ID          uuid.UUID `db:"id"`
	GalleryID   uuid.UUID `db:"gallery_id"`
	AuthVersion int       `db:"auth_version"`
	ExpiresAt   time.Time `db:"expires_at"`
	// The visitor who named themself with this token; nil for an
	// anonymous viewer, whose favourites are the token's alone.
	Name  *string `db:"name"`
	Email *string `db:"email"`
}

// Visitor is who a viewer says they are, given once per gallery.
type Visitor struct {
	Name  string
	Email string // may be empty
}

// key is what makes the tokens of one person one chooser: their email,
// else their name, without regard to case or surrounding space.
func (v Visitor) key() string {
	if e := strings.TrimSpace(v.Email); e != "" {
		return "email:" + strings.ToLower(e)
	}
	return "name:" + strings.ToLower(strings.TrimSpace(v.Name))
}

const viewerColumns = `id, gallery_id, auth_version, expires_at, name, email`

// ViewerLimitError says a gallery has as many live viewers as it may
// have; one more fits at FreeAt, when the oldest expires.
type ViewerLimitError struct{ FreeAt time.Time }

func (e *ViewerLimitError) Error() string {
	return "store: the gallery has as many live viewers as it may, until " + e.FreeAt.UTC().Format(time.RFC3339)
}

// CreateViewer records a viewer of g whose token hashes to tokenHash,
// valid for ttl and until g's password changes, unless g has maxLive
// viewers already (*ViewerLimitError).
func (s *Store) CreateViewer(ctx context.Context, g *Gallery, tokenHash []byte, ttl time.Duration, maxLive int, who *Visitor) (*Viewer, error) {
	v := &Viewer{}
	err := s.WithTx(ctx, func(tx *Store) error {
		if err := tx.lockGallery(ctx, g.ID); err != nil {
			return err
		}
		var live struct {
			N      int        `db:"n"`
			Oldest *time.Time `db:"oldest"`
		}
		if err := tx.db.GetContext(ctx, &live, `SELECT count(*) AS n, min(expires_at) AS oldest FROM gallery_viewers
			WHERE gallery_id = $1 AND expires_at > now()`, g.ID); err != nil {
			return err
		}
		if live.N >= maxLive && live.Oldest != nil {
			return &ViewerLimitError{FreeAt: *live.Oldest}
		}
		var name, email, key any
		if who != nil {
			name, key = strings.TrimSpace(who.Name), who.key()
			if e := strings.TrimSpace(who.Email); e != "" {
				email = e
			}
		}
		return tx.db.GetContext(ctx, v, `
			INSERT INTO gallery_viewers (id, gallery_id, token_hash, auth_version, expires_at, name, email, visitor_key)
			VALUES ($1, $2, $3, $4, now() + $5::interval, $6, $7, $8)
			RETURNING `+viewerColumns, uuid.New(), g.ID, tokenHash, g.AuthVersion, ttl.String(), name, email, key)
	})
	return v, err
}

// lockGallery takes the gallery's row for a change that counts what the
// gallery holds, so such changes take their turns and the counts stay
// true. Changes to its photos take the row first too, so the locks are
// always taken in one order.
func (s *Store) lockGallery(ctx context.Context, id uuid.UUID) error {
	_, err := s.db.ExecContext(ctx, `SELECT 1 FROM galleries WHERE id = $1 FOR NO KEY UPDATE`, id)
	return err
}

// ViewerByToken returns the live viewer of gallery whose token hashes to
// tokenHash: ErrNotFound when there is none, the token is another
// gallery's, has expired, or predates the gallery's password.
func (s *Store) ViewerByToken(ctx context.Context, gallery *Gallery, tokenHash []byte) (*Viewer, error) {
	v := &Viewer{}
	err := s.db.GetContext(ctx, v, `SELECT `+viewerColumns+` FROM gallery_viewers
		WHERE token_hash = $1 AND gallery_id = $2 AND auth_version = $3 AND expires_at > now()`,
		tokenHash, gallery.ID, gallery.AuthVersion)
	return v, notFound(err)
}

// GalleryItem is one photo of a gallery as its viewers see it.
type GalleryItem struct {
	AssetID      uuid.UUID `db:"asset_id"`
	Status       string    `db:"status"`
	BlobKey      string    `db:"blob_key"`
	ContentType  string    `db:"content_type"`
	WatermarkKey *string   `db:"watermark_key"`
	Edited       bool      `db:"edited"` // its newest edit is rendered: show that preview
	FileName     string    `db:"filename"`
	// The size of the preview shown (the edit's, when Edited); nil until
	// ingest made it.
	Width     *int `db:"width_px"`
	Height    *int `db:"height_px"`
	Favorites int  `db:"favorites"`
	Comments  int  `db:"comments"`
	Favorited bool `db:"favorited"` // by the viewer asking
}

// GalleryItems lists a gallery's photos in the order they were added,
// with their counts and whether viewer (when not nil) favourited each.
// Photos that failed or were duplicates have no preview of their own and
// never will, so clients never see them (the owner's count keeps them).
func (s *Store) GalleryItems(ctx context.Context, gallery uuid.UUID, viewer *uuid.UUID) ([]GalleryItem, error) {
	var out []GalleryItem
	err := s.db.SelectContext(ctx, &out, `
		SELECT ga.asset_id, a.status, a.blob_key, a.content_type, ga.watermark_key, a.filename,
		       coalesce(shown.kind = 'edit_preview', false) AS edited, shown.width_px, shown.height_px,
		       (SELECT count(DISTINCT `+chooser+`) FROM gallery_favorites f JOIN gallery_viewers fv ON fv.id = f.viewer_id
		        WHERE f.gallery_id = ga.gallery_id AND f.asset_id = ga.asset_id) AS favorites,
		       (SELECT count(*) FROM gallery_comments c WHERE c.gallery_id = ga.gallery_id AND c.asset_id = ga.asset_id) AS comments,
		       EXISTS (SELECT 1 FROM gallery_favorites f JOIN gallery_viewers fv ON fv.id = f.viewer_id
		               JOIN gallery_viewers me ON me.id = $2
		               WHERE f.gallery_id = ga.gallery_id AND f.asset_id = ga.asset_id
		                 AND (fv.id = me.id OR fv.visitor_key = me.visitor_key)) AS favorited
		FROM gallery_assets ga JOIN assets a ON a.id = ga.asset_id
		LEFT JOIN LATERAL (SELECT f.kind, f.width_px, f.height_px FROM asset_files f
		                   WHERE f.asset_id = ga.asset_id AND f.kind IN ('edit_preview', 'preview')
		                   ORDER BY f.kind = 'edit_preview' DESC LIMIT 1) shown ON true
		WHERE ga.gallery_id = $1 AND a.status NOT IN ('failed', 'duplicate') ORDER BY ga.seq`, gallery, viewer)
	return out, err
}

// chooser is the SQL of who a favourite of viewer row fv belongs to: the
// visitor who named themself, with whichever of their tokens, or else the
// anonymous token alone.
const chooser = `coalesce(fv.visitor_key, fv.id::text)`

// ErrSelectionLimit says a visitor has chosen as many photos as the
// gallery's selection limit allows.
var ErrSelectionLimit = errors.New("store: the visitor has chosen as many photos as the gallery allows")

// Favorite sets whether viewer's visitor favourites asset in gallery, and
// returns the asset's favourite count there (one a visitor) and how many
// photos the visitor has chosen. Choosing past limit (nil: none) is
// ErrSelectionLimit; ErrNotFound when the asset is not in the gallery.
func (s *Store) Favorite(ctx context.Context, gallery, asset, viewer uuid.UUID, on bool, limit *int) (count, chosen int, err error) {
	err = s.WithTx(ctx, func(tx *Store) error {
		if err := tx.inGallery(ctx, gallery, asset); err != nil {
			return err
		}
		// One visitor's tokens choose one after another, so two cannot
		// both take the last of the limit.
		var me string
		if err := tx.db.GetContext(ctx, &me, `SELECT `+chooser+` FROM gallery_viewers fv WHERE fv.id = $1`, viewer); err != nil {
			return notFound(err)
		}
		if _, err := tx.db.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, gallery.String()+me); err != nil {
			return err
		}
		mine := `SELECT f.asset_id FROM gallery_favorites f JOIN gallery_viewers fv ON fv.id = f.viewer_id
			WHERE f.gallery_id = $1 AND ` + chooser + ` = $2`
		if !on {
			if _, err := tx.db.ExecContext(ctx, `DELETE FROM gallery_favorites WHERE gallery_id = $1 AND asset_id = $3
				AND viewer_id IN (SELECT fv.id FROM gallery_viewers fv WHERE fv.gallery_id = $1 AND `+chooser+` = $2)`,
				gallery, me, asset); err != nil {
				return err
			}
		} else {
			var have struct {
				Chosen int  `db:"chosen"`
				This   bool `db:"this"`
			}
			if err := tx.db.GetContext(ctx, &have, `SELECT count(*) AS chosen, coalesce(bool_or(m.asset_id = $3), false) AS this
				FROM (`+mine+`) m`, gallery, me, asset); err != nil {
				return err
			}
			switch {
			case have.This:
			case limit != nil && have.Chosen >= *limit:
				return ErrSelectionLimit
			default:
				if _, err := tx.db.ExecContext(ctx, `INSERT INTO gallery_favorites (gallery_id, asset_id, viewer_id) VALUES ($1, $2, $3)
					ON CONFLICT DO NOTHING`, gallery, asset, viewer); err != nil {
					return err
				}
			}
		}
		var now struct {
			Count  int `db:"count"`
			Chosen int `db:"chosen"`
		}
		defer func() { count, chosen = now.Count, now.Chosen }()
		return tx.db.GetContext(ctx, &now, `SELECT
			(SELECT count(DISTINCT `+chooser+`) FROM gallery_favorites f JOIN gallery_viewers fv ON fv.id = f.viewer_id
			 WHERE f.gallery_id = $1 AND f.asset_id = $3) AS count,
			(SELECT count(*) FROM (`+mine+`) m) AS chosen`, gallery, me, asset)
	})
	return count, chosen, err
}

// VisitorChoice is what one visitor of a gallery chose, for its owner.
type VisitorChoice struct {
	Name      *string `db:"name"` // nil for an anonymous viewer
	Email     *string `db:"email"`
	AssetIDs  UUIDs   `db:"asset_ids"`
	FileNames Strings `db:"file_names"`
}

// GalleryFavorites lists who chose what in gallery: each visitor, with
// every token they used, once, and each anonymous viewer on its own; a
// visitor's photos in the gallery's order.
func (s *Store) GalleryFavorites(ctx context.Context, gallery uuid.UUID) ([]VisitorChoice, error) {
	var out []VisitorChoice
	err := s.db.SelectContext(ctx, &out, `
		SELECT max(fv.name) AS name, max(fv.email) AS email,
		       array_agg(f.asset_id ORDER BY ga.seq) AS asset_ids, array_agg(a.filename ORDER BY ga.seq) AS file_names
		FROM gallery_favorites f
		JOIN gallery_viewers fv ON fv.id = f.viewer_id
		JOIN gallery_assets ga ON ga.gallery_id = f.gallery_id AND ga.asset_id = f.asset_id
		JOIN assets a ON a.id = f.asset_id
		WHERE f.gallery_id = $1
		GROUP BY `+chooser+`
		ORDER BY max(fv.name) NULLS LAST, min(f.created_at)`, gallery)
	return out, err
}

// Comment is what a viewer wrote about a photo of a gallery.
type Comment struct {
	ID        uuid.UUID  `db:"id"`
	AssetID   uuid.UUID  `db:"asset_id"`
	ViewerID  *uuid.UUID `db:"viewer_id"`
	Body      string     `db:"body"`
	CreatedAt time.Time  `db:"created_at"`
}

// Errors of AddComment past its caps.
var (
	ErrViewerComments  = errors.New("store: the viewer has written as many comments as one may")
	ErrGalleryComments = errors.New("store: the gallery holds as many comments as it may")
)

// CommentCaps bound the comments of one viewer and of one gallery.
type CommentCaps struct{ PerViewer, PerGallery int }

// AddComment records viewer's comment on asset in gallery and returns it
// with the asset's comment count there; ErrNotFound when the asset is not
// in the gallery, ErrViewerComments or ErrGalleryComments past caps.
func (s *Store) AddComment(ctx context.Context, gallery, asset, viewer uuid.UUID, body string, caps CommentCaps) (*Comment, int, error) {
	c := &Comment{}
	var n int
	err := s.WithTx(ctx, func(tx *Store) error {
		if err := tx.lockGallery(ctx, gallery); err != nil {
			return err
		}
		if err := tx.inGallery(ctx, gallery, asset); err != nil {
			return err
		}
		var count struct {
			Viewer  int `db:"viewer"`
			Gallery int `db:"gallery"`
		}
		if err := tx.db.GetContext(ctx, &count, `SELECT
				(SELECT count(*) FROM gallery_comments WHERE viewer_id = $2) AS viewer,
				(SELECT count(*) FROM gallery_comments WHERE gallery_id = $1) AS gallery`, gallery, viewer); err != nil {
			return err
		}
		switch {
		case count.Viewer >= caps.PerViewer:
			return ErrViewerComments
		case count.Gallery >= caps.PerGallery:
			return ErrGalleryComments
		}
		if err := tx.db.GetContext(ctx, c, `INSERT INTO gallery_comments (id, gallery_id, asset_id, viewer_id, body)
			VALUES ($1, $2, $3, $4, $5) RETURNING id, asset_id, viewer_id, body, created_at`,
			uuid.New(), gallery, asset, viewer, body); err != nil {
			return err
		}
		return tx.db.GetContext(ctx, &n, `SELECT count(*) FROM gallery_comments WHERE gallery_id = $1 AND asset_id = $2`,
			gallery, asset)
	})
	return c, n, err
}

// GalleryComments lists a gallery's comments for its owner, oldest first,
// a page at a time.
func (s *Store) GalleryComments(ctx context.Context, gallery uuid.UUID, after *Cursor, limit int) (Page[Comment], error) {
	var rows []Comment
	afterTime, afterID := time.Time{}, uuid.Nil
	if after != nil {
		afterTime, afterID = after.Time, after.ID
	}
	err := s.db.SelectContext(ctx, &rows, `SELECT id, asset_id, viewer_id, body, created_at FROM gallery_comments
		WHERE gallery_id = $1 AND (created_at, id) > ($2, $3) ORDER BY created_at, id LIMIT $4`, gallery, afterTime, afterID, limit+1)
	if err != nil {
		return Page[Comment]{}, err
	}
	return pageOf(rows, limit, func(c Comment) Cursor { return Cursor{Time: c.CreatedAt, ID: c.ID} }), nil
}

// inGallery locks asset's place in gallery, or answers ErrNotFound.
func (s *Store) inGallery(ctx context.Context, gallery, asset uuid.UUID) error {
	var ok bool
	err := s.db.GetContext(ctx, &ok, `SELECT true FROM gallery_assets WHERE gallery_id = $1 AND asset_id = $2 FOR SHARE`,
		gallery, asset)
	return notFound(err)
}
