package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"lightbox/app"
	"lightbox/blob"
	"lightbox/jobs"
	"lightbox/ptr"
	"lightbox/store"
)

// downloadTTL is how long signed file URLs in answers stay valid.
const downloadTTL = 15 * time.Minute

type assetFlags struct {
	Readiness string `json:"readiness"`
	Status    string `json:"status"`
	Thumbnail bool   `json:"thumbnail"`
	Preview   bool   `json:"preview"`
	Metadata  bool   `json:"metadata"`
	Hash      bool   `json:"hash"`
	Embedding bool   `json:"embedding"`
	Clustered bool   `json:"clustered"`
	Edited    bool   `json:"edited"` // has an edit version
	// The same stages under the names seed 002's app reads.
	ProcessingReady bool       `json:"processingReady"` // thumbnail, preview and EXIF
	ThumbnailReady  bool       `json:"thumbnailReady"`
	PreviewReady    bool       `json:"previewReady"`
	PhashReady      bool       `json:"phashReady"`
	EmbeddingReady  bool       `json:"embeddingReady"`
	DuplicateOf     *uuid.UUID `json:"duplicateOf,omitempty"`
	MetadataWarning *string    `json:"metadataWarning,omitempty"`
	ErrorCode       *string    `json:"errorCode"`
	ErrorMessage    *string    `json:"errorMessage"`

	user json.RawMessage // the app's own flags, set with PATCH
}

// MarshalJSON writes the service's flags with the app's own beside them;
// the service's win a clash (PATCH refuses their names anyway).
func (f assetFlags) MarshalJSON() ([]byte, error) {
	type plain assetFlags
	out, err := json.Marshal(plain(f))
	if err != nil || len(f.user) == 0 || string(f.user) == "{}" {
		return out, err
	}
	var all, user map[string]json.RawMessage
	if err := json.Unmarshal(out, &all); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(f.user, &user); err != nil {
		return nil, err
	}
	for k, v := range user {
		if _, taken := all[k]; !taken {
			all[k] = v
		}
	}
	return json.Marshal(all)
}

// serviceFlags are the names of the flags the service sets.
var serviceFlags = sync.OnceValue(func() map[string]bool {
	names := map[string]bool{}
	t := reflect.TypeFor[assetFlags]()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" {
			names[name] = true
		}
	}
	return names
})

type assetJSON struct {
	ID             string          `json:"id"`
	ProjectID      string          `json:"projectId"`
	Filename       string          `json:"filename"`
	ContentType    string          `json:"contentType"`
	ByteSize       int64           `json:"byteSize"`
	ChecksumSHA256 *string         `json:"checksumSha256"`
	CapturedAt     *time.Time      `json:"capturedAt"`
	CapturedOffset *string         `json:"capturedOffset"`
	IngestedAt     *time.Time      `json:"ingestedAt"`
	WidthPx        *int            `json:"widthPx"`
	HeightPx       *int            `json:"heightPx"`
	CameraMake     *string         `json:"cameraMake"`
	CameraModel    *string         `json:"cameraModel"`
	LensModel      *string         `json:"lensModel"`
	FocalLengthMm  *float64        `json:"focalLengthMm"`
	ShutterSpeed   *string         `json:"shutterSpeed"`
	Aperture       *float64        `json:"aperture"`
	ISO            *int            `json:"iso"`
	GPS            *gpsJSON        `json:"gps"`
	EXIF           json.RawMessage `json:"exif"`
	Quality        json.RawMessage `json:"quality"`
	// stored is the quality as stored, which addRatings judges again
	// with the faces.
	stored         json.RawMessage
	Flags          assetFlags      `json:"flags"`
	Keywords       []string        `json:"keywords"`
	Notes          string          `json:"notes"`
	IPTC           json.RawMessage `json:"iptc"`
	MyRating       *app.RatingJSON `json:"myRating,omitempty"` // the caller's; left out when not rated or not known
	Faces          *faceSummary    `json:"faces"`              // null until its faces were looked for
	BestPreviewURL *string         `json:"bestPreviewUrl"`
	// PairAssetID is the other half of a RAW+JPEG pair, culled as one.
	PairAssetID *uuid.UUID `json:"pairAssetId"`
	CreatedAt   time.Time  `json:"createdAt"`
	UpdatedAt   time.Time  `json:"updatedAt"`
}

type gpsJSON struct {
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
}

// readiness maps an asset's status to the stage a photo app cares about.
var readiness = map[string]string{
	store.AssetPendingUpload: "uploading",
	store.AssetUploaded:      "uploaded",
	store.AssetCull:          "cull",
	store.AssetSearch:        "search",
	store.AssetAI:            "ai",
	store.AssetFailed:        "failed",
	store.AssetDuplicate:     "duplicate",
}

// statusOf is the asset status of each readiness.
var statusOf = func() map[string]string {
	m := map[string]string{}
	for status, r := range readiness {
		m[r] = status
	}
	return m
}()

// stage order, to tell which outputs a status implies.
var stageRank = map[string]int{store.AssetCull: 1, store.AssetSearch: 2, store.AssetAI: 3}

func (s *Server) toAssetJSON(ctx context.Context, a store.Asset) assetJSON {
	utc := func(t *time.Time) *time.Time {
		if t == nil {
			return nil
		}
		u := t.UTC()
		return &u
	}
	rank := stageRank[a.Status]
	culled, thumbnail := rank >= 1, rank >= 1 || a.ThumbnailAt != nil
	out := assetJSON{
		ID: a.ID.String(), ProjectID: a.ProjectID.String(), Filename: a.Filename, ContentType: a.ContentType,
		ByteSize: a.ByteSize, ChecksumSHA256: a.ChecksumSHA256, CapturedAt: utc(a.CapturedAt), CapturedOffset: a.CapturedOffset,
		IngestedAt: utc(cmp.Or(a.IngestedAt, &a.CreatedAt)), WidthPx: a.WidthPx, HeightPx: a.HeightPx, CameraMake: a.CameraMake,
		CameraModel: a.CameraModel, LensModel: a.LensModel, FocalLengthMm: a.FocalLengthMm, ShutterSpeed: a.ShutterSpeed,
		Aperture: a.Aperture, ISO: a.ISO, EXIF: objectOrEmpty(a.EXIF), Quality: app.AssetQuality(a.ID, a.Quality, nil), stored: a.Quality,
		Flags: assetFlags{
			Readiness: readiness[a.Status], Status: a.Status,
			Thumbnail: thumbnail, Preview: culled, Metadata: culled, Hash: culled,
			Embedding: rank >= 2, Clustered: rank >= 3, Edited: a.Edited,
			ProcessingReady: culled, ThumbnailReady: thumbnail, PreviewReady: culled, PhashReady: culled, EmbeddingReady: rank >= 2,
			DuplicateOf: a.DuplicateOf, MetadataWarning: a.MetadataWarning, ErrorCode: a.ErrorCode, ErrorMessage: a.ErrorMessage,
			user: a.UserFlags,
		},
		Keywords: append([]string{}, a.Keywords...), Notes: a.Notes, IPTC: a.IPTC,
		PairAssetID: a.PairAssetID, CreatedAt: a.CreatedAt.UTC(), UpdatedAt: a.UpdatedAt.UTC(),
	}
	if a.GPSLat != nil && a.GPSLon != nil {
		out.GPS = &gpsJSON{*a.GPSLat, *a.GPSLon}
	}
	if rank >= 1 {
		// Expiry on a minute boundary: the same link for a minute lets
		// browsers cache the preview.
		u, err := s.signer.SignGet(ctx, blob.Grant{Key: blob.DerivedKey(a.ID, blob.KindPreview), ContentType: "image/jpeg",
			Expires: time.Now().Add(downloadTTL).Truncate(time.Minute).Add(time.Minute)})
		if err != nil {
			// The asset is still worth showing; its preview link is not.
			s.log.WarnContext(ctx, "sign preview url", "asset", a.ID, "err", err)
		} else {
			out.BestPreviewURL = &u.URL
		}
	}
	return out
}

// objectOrEmpty is a JSON object column as the API shows it: {} for none,
// never null, as the KILO SDK reads it.
func objectOrEmpty(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(`{}`)
	}
	return raw
}

func (s *Server) listAssets(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	if _, err := s.store.Project(c.Request.Context(), principal(c).ID, id); err != nil {
		fail(c, err)
		return
	}
	cur, limit, err := pageParams(c)
	if err != nil {
		fail(c, err)
		return
	}
	filter, err := assetFilter(c)
	if err == nil {
		err = s.checkClientFavorite(c, id, "clientFavorite", filter.ClientFavorite)
	}
	if err != nil {
		fail(c, err)
		return
	}
	page, err := s.store.Assets(c.Request.Context(), id, filter, cur, limit)
	if err != nil {
		fail(c, err)
		return
	}
	out := toPaged(page, func(a store.Asset) assetJSON { return s.toAssetJSON(c.Request.Context(), a) })
	if err := s.addRatings(c, out.Items); err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

// assetFilter reads the list's filters (the caller's own ratings, the
// camera, the capture time, the readiness, the faces) and its order.
func assetFilter(c *gin.Context) (store.AssetFilter, error) {
	f := store.AssetFilter{User: principal(c).ID, Camera: strings.TrimSpace(c.Query("camera"))}
	errs := app.FieldErrors{}
	for name, dst := range map[string]**bool{"picked": &f.Picked, "rejected": &f.Rejected,
		"eyesClosed": &f.EyesClosed, "faceOutOfFocus": &f.FaceOutOfFocus} {
		if v := c.Query(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs.Add(name, "must be true or false")
			}
			*dst = &b
		}
	}
	if v := c.Query("ratingMin"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 5 {
			errs.Add("ratingMin", "must be a whole number from 1 to 5")
		}
		f.RatingMin = &n
	}
	if v := c.Query("colorLabel"); v != "" {
		f.ColorLabels = strings.Split(v, ",")
		checkColorLabels(errs, "colorLabel", f.ColorLabels)
	}
	for name, dst := range map[string]**time.Time{"from": &f.From, "to": &f.To} {
		if v := c.Query(name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				errs.Add(name, "must be an RFC 3339 time, such as 2026-06-21T14:00:00Z")
				continue
			}
			*dst = &t
		}
	}
	checkPhotoFilters(errs, "", f.Camera, f.From, f.To)
	f.ClientFavorite = parseClientFavorite(errs, "clientFavorite", c.Query("clientFavorite"))
	if v := c.Query("readiness"); v != "" {
		for _, r := range strings.Split(v, ",") {
			status, ok := statusOf[strings.TrimSpace(r)]
			if !ok {
				errs.Add("readiness", "must list uploading, uploaded, cull, search, ai, failed or duplicate, separated by commas")
				break
			}
			f.Statuses = append(f.Statuses, status)
		}
	}
	switch by := c.DefaultQuery("sort", store.SortUploaded); by {
	case store.SortUploaded, store.SortCaptured, store.SortFilename:
		f.Order.By = by
	default:
		errs.Add("sort", "must be uploaded, capturedAt or filename")
	}
	switch c.DefaultQuery("order", "asc") {
	case "asc":
	case "desc":
		f.Order.Desc = true
	default:
		errs.Add("order", "must be asc or desc")
	}
	return f, errs.Err()
}

const clientFavoriteRule = "must be any or the id of a gallery of this project"

// parseClientFavorite reads a clientFavorite filter: nil for none,
// uuid.Nil for "any", or a gallery's id.
func parseClientFavorite(errs app.FieldErrors, field, v string) *uuid.UUID {
	if v == "" {
		return nil
	}
	g, err := uuid.Parse(v)
	if v == "any" {
		g, err = uuid.Nil, nil
	} else if g == uuid.Nil {
		err = errors.New("the nil id names no gallery")
	}
	if err != nil {
		errs.Add(field, clientFavoriteRule)
	}
	return &g
}

// checkClientFavorite refuses a clientFavorite filter naming a gallery
// that is not one of project's, so a filter never reads as "no favourites"
// for a gallery the caller cannot see.
func (s *Server) checkClientFavorite(c *gin.Context, project uuid.UUID, field string, gallery *uuid.UUID) error {
	if gallery == nil || *gallery == uuid.Nil {
		return nil
	}
	g, err := s.store.Gallery(c.Request.Context(), principal(c).ID, *gallery)
	if errors.Is(err, store.ErrNotFound) || err == nil && g.ProjectID != project {
		return app.FieldErrors{field: clientFavoriteRule}.Err()
	}
	return err
}

// checkColorLabels checks a colour label filter: labels, or "none" for
// the assets without one.
func checkColorLabels(errs app.FieldErrors, field string, labels []string) {
	for _, l := range labels {
		if l != store.NoColorLabel && !slices.Contains(store.ColorLabels, l) {
			errs.Add(field, "must list red, yellow, green, blue, purple or none")
			return
		}
	}
}

// checkPhotoFilters checks the filters a list and a search share, naming
// fields under prefix ("filters.").
func checkPhotoFilters(errs app.FieldErrors, prefix, camera string, from, to *time.Time) {
	if len(camera) > 200 {
		errs.Add(prefix+"camera", "must be at most 200 characters")
	}
	if !isText(camera) {
		errs.Add(prefix+"camera", "must be UTF-8 text without NUL characters")
	}
	checkOffset(errs, prefix+"from", from)
	checkOffset(errs, prefix+"to", to)
	if from != nil && to != nil && to.Before(*from) {
		errs.Add(prefix+"to", "must not be before "+prefix+"from")
	}
}

// addRatings fills in the caller's rating of each asset, and its faces
// (and what they warn of, in its quality), in one query each.
func (s *Server) addRatings(c *gin.Context, assets []assetJSON) error {
	ids := make([]uuid.UUID, len(assets))
	for i, a := range assets {
		ids[i] = uuid.MustParse(a.ID)
	}
	ratings, err := s.store.Ratings(c.Request.Context(), principal(c).ID, ids)
	if err != nil {
		return err
	}
	scans, err := s.store.FaceScans(c.Request.Context(), ids)
	if err != nil {
		return err
	}
	for i, id := range ids {
		if r, ok := ratings[id]; ok {
			assets[i].MyRating = app.RatingJSONOf(r)
		}
		if f, ok := scans[id]; ok {
			assets[i].Faces = toFaceSummary(f)
			assets[i].Quality = app.AssetQuality(id, assets[i].stored, &f)
		}
	}
	return nil
}

// ownAsset loads the caller's asset named by the path's id. An id that
// still carries a ":verb" reached a route that takes no action.
func (s *Server) ownAsset(c *gin.Context) (*store.Asset, error) {
	if strings.Contains(c.Param("id"), ":") {
		return nil, errNoRoute()
	}
	return owned(c, s.store.Asset)
}

func (s *Server) getAsset(c *gin.Context) {
	a, err := s.ownAsset(c)
	if err != nil {
		fail(c, err)
		return
	}
	s.answerAsset(c, a)
}

// answerAsset answers with an asset as the caller sees it.
func (s *Server) answerAsset(c *gin.Context, a *store.Asset) {
	out := []assetJSON{s.toAssetJSON(c.Request.Context(), *a)}
	if err := s.addRatings(c, out); err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out[0])
}

type fileJSON struct {
	Kind           string    `json:"kind"`
	URL            string    `json:"url"`
	ContentType    string    `json:"contentType"`
	ByteSize       int64     `json:"byteSize"`
	ChecksumSHA256 string    `json:"checksumSha256"`
	WidthPx        *int      `json:"widthPx"`
	HeightPx       *int      `json:"heightPx"`
	ExpiresAt      time.Time `json:"expiresAt"`
}

func (s *Server) assetFiles(c *gin.Context) {
	a, err := s.ownAsset(c)
	if err != nil {
		fail(c, err)
		return
	}
	files, err := s.store.AssetFiles(c.Request.Context(), a.ID)
	if err != nil {
		fail(c, err)
		return
	}
	expires := time.Now().Add(downloadTTL).UTC().Truncate(time.Second)
	out := make([]fileJSON, len(files))
	for i, f := range files {
		u, err := s.signer.SignGet(c.Request.Context(), blob.Grant{Key: f.BlobKey, Expires: expires, ContentType: f.ContentType})
		if err != nil {
			fail(c, err)
			return
		}
		out[i] = fileJSON{
			Kind: f.Kind, ContentType: f.ContentType, ByteSize: f.ByteSize, ChecksumSHA256: f.ChecksumSHA256,
			WidthPx: f.WidthPx, HeightPx: f.HeightPx, ExpiresAt: u.Expires, URL: u.URL,
		}
	}
	c.JSON(http.StatusOK, gin.H{"files": out})
}

// reprocess runs an asset's pipeline again (see jobs.Dispatcher.Reprocess).
func (s *Server) reprocess(c *gin.Context) {
	a, err := s.ownAsset(c)
	if err != nil {
		fail(c, err)
		return
	}
	if err := notProcessable(a, "processed"); err != nil {
		fail(c, err)
		return
	}
	job, err := s.app.Reprocess(c.Request.Context(), logger(c), principal(c).ID, a)
	var dup *store.DuplicateError
	switch {
	case errors.Is(err, jobs.ErrQueueUnavailable):
		err = apiError(http.StatusServiceUnavailable, "queue_unavailable", "The queue does not answer; retry shortly.")
	case errors.As(err, &dup):
		err = errDuplicate(dup.Of)
	}
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, gin.H{"queuedJobs": []uuid.UUID{job}})
}

// notProcessable refuses at once work that needs an asset's original
// when it has none (see store.Asset.HasOriginal): the worker would only
// fail it later.
func notProcessable(a *store.Asset, done string) error {
	if a.HasOriginal() {
		return nil
	}
	return apiError(http.StatusConflict, "not_processable", "Only finalized originals can be %s; this asset is %s.", done, a.Status)
}

// blobPolicy lets a stored file be shown and nothing more: a file that
// a browser would run (HTML, SVG with script) runs nothing, loads
// nothing, and cannot be framed or submit a form.
const blobPolicy = "default-src 'none'; img-src 'self'; media-src 'self'; style-src 'unsafe-inline'; " +
	"frame-ancestors 'none'; form-action 'none'; base-uri 'none'"

// blobHeaders keeps a browser from guessing a stored file's type and
// from running anything in it, on every answer of the blob routes,
// refusals included.
func blobHeaders(c *gin.Context) {
	h := c.Writer.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", blobPolicy)
	c.Next()
}

// getBlob serves a file through a signed GET URL.
func (s *Server) getBlob(c *gin.Context) {
	key := strings.TrimPrefix(c.Param("key"), "/")
	if blob.CheckKey(key) != nil {
		fail(c, apiError(http.StatusBadRequest, "invalid_key", "The object key is not valid."))
		return
	}
	g, err := s.verifier.Verify(http.MethodGet, key, c.Request.URL.Query(), time.Now())
	switch {
	case errors.Is(err, blob.ErrExpired):
		fail(c, apiError(http.StatusForbidden, "url_expired", "The download URL expired; ask for the file again."))
		return
	case err != nil:
		fail(c, apiError(http.StatusForbidden, "invalid_signature", "The download URL's signature does not match."))
		return
	}
	f, info, err := s.blobs.Open(c.Request.Context(), key)
	if errors.Is(err, blob.ErrNotFound) {
		fail(c, apiError(http.StatusNotFound, "not_found", "The file does not exist (yet)."))
		return
	}
	if err != nil {
		fail(c, err)
		return
	}
	defer f.Close()
	if g.ContentType != "" {
		c.Header("Content-Type", g.ContentType)
	}
	c.Header("Cache-Control", "private, max-age=600")
	http.ServeContent(c.Writer, c.Request, "", info.ModTime, f)
}

// Bounds of what a person notes on an asset.
const (
	maxKeywords, maxKeywordLen = store.MaxKeywords, store.MaxKeywordLen
	maxIPTC, maxUserFlags      = store.MaxIPTC, 4 << 10
)

// patchAsset changes what a person notes on an asset: keywords, notes,
// IPTC fields (replaced whole) and the app's own flags (merged; a flag set
// to null is removed).
func (s *Server) patchAsset(c *gin.Context) {
	a, err := s.ownAsset(c)
	if err != nil {
		fail(c, err)
		return
	}
	var in struct {
		Keywords optional[[]string]                   `json:"keywords"`
		Notes    optional[string]                     `json:"notes"`
		IPTC     optional[map[string]json.RawMessage] `json:"iptc"`
		Flags    optional[map[string]json.RawMessage] `json:"flags"`
	}
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	errs := app.FieldErrors{}
	var change store.AssetChange
	if in.Keywords.Set {
		kw := keywords(errs, in.Keywords.Value)
		change.Keywords = &kw
	}
	if in.Notes.Set {
		notes := ""
		if in.Notes.Value != nil {
			notes = *in.Notes.Value
		}
		if utf8.RuneCountInString(notes) > maxNotes {
			errs.Add("notes", "must be at most 5000 characters")
		}
		change.Notes = &notes
	}
	if in.IPTC.Set {
		change.IPTC = jsonObject(errs, "iptc", in.IPTC.Value, maxIPTC)
	}
	if in.Flags.Set {
		for name := range ptr.Value(in.Flags.Value) {
			if serviceFlags()[name] {
				errs.Add("flags."+name, "is set by the service")
			}
		}
		change.Flags = jsonObject(errs, "flags", in.Flags.Value, maxUserFlags)
	}
	if !in.Keywords.Set && !in.Notes.Set && !in.IPTC.Set && !in.Flags.Set {
		errs.Add("(body)", "must set keywords, notes, iptc or flags")
	}
	if err := errs.Err(); err != nil {
		fail(c, err)
		return
	}
	updated, err := s.app.UpdateAsset(c.Request.Context(), principal(c).ID, a.ID, change)
	if err != nil {
		fail(c, err)
		return
	}
	s.answerAsset(c, updated)
}

// keywords checks a keyword list: trimmed, none empty, no repeats (in any
// case), within bounds. null clears it.
func keywords(errs app.FieldErrors, in *[]string) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, k := range ptr.Value(in) {
		k = strings.TrimSpace(k)
		switch {
		case k == "" || utf8.RuneCountInString(k) > maxKeywordLen:
			errs.Add("keywords", "must each be 1 to 100 characters")
			return nil
		case !seen[strings.ToLower(k)]:
			seen[strings.ToLower(k)] = true
			out = append(out, k)
		}
	}
	if len(out) > maxKeywords {
		errs.Add("keywords", "must be at most 100")
	}
	return out
}

// jsonObject is a JSON object field as stored: null stores {}.
func jsonObject(errs app.FieldErrors, field string, in *map[string]json.RawMessage, limit int) json.RawMessage {
	raw, _ := json.Marshal(ptr.Value(in))
	if string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if len(raw) > limit {
		errs.Add(field, fmt.Sprintf("must be at most %d KiB of JSON", limit>>10))
	}
	checkJSONNumbers(errs, field, raw)
	return raw
}

// checkJSONNumbers refuses JSON, kept as it came, holding a number that
// does not fit a 64-bit float: JSON allows any, but Postgres stores them
// in jsonb only up to its numeric's limits, and failed on 1e200000 with a
// 500.
func checkJSONNumbers(errs app.FieldErrors, field string, raw []byte) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return // the end, or JSON the decode before it refused
		}
		n, ok := tok.(json.Number)
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(n.String(), 64)
		mantissa, _, _ := strings.Cut(strings.ToLower(n.String()), "e")
		if err != nil || f == 0 && strings.ContainsAny(mantissa, "123456789") {
			errs.Add(field, "holds a number too large or too small: numbers must fit a 64-bit float")
			return
		}
	}
}

// deleteAsset hides an asset at once and leaves its bytes and derived
// files to an asset:delete task. Its attestation stays in the chain.
func (s *Server) deleteAsset(c *gin.Context) {
	ctx := c.Request.Context()
	a, err := s.ownAsset(c)
	if err != nil {
		fail(c, err)
		return
	}
	if _, err := s.app.DeleteAsset(ctx, logger(c), principal(c).ID, a.ID); err != nil {
		fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
