package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"lightbox/app"
	"lightbox/blob"
	"lightbox/store"
)

type prepareFile struct {
	ClientFileID *string    `json:"clientFileId"`
	Filename     string     `json:"filename"`
	ByteSize     int64      `json:"byteSize"`
	ContentType  string     `json:"contentType"`
	CapturedAt   *time.Time `json:"capturedAt"`
}

type uploadJSON struct {
	ClientFileID *string           `json:"clientFileId"`
	AssetID      string            `json:"assetId"`
	UploadURL    string            `json:"uploadUrl"`
	Headers      map[string]string `json:"headers"`
	ExpiresAt    time.Time         `json:"expiresAt"`
}

// prepareUpload records the files a client is about to send and hands out
// one signed PUT URL for each (app.ReserveUploads). Only files that pass
// the checks count against the uploads rate.
func (s *Server) prepareUpload(c *gin.Context) {
	p, err := s.activeProject(c)
	if err != nil {
		fail(c, err)
		return
	}
	var in struct {
		Files []prepareFile `json:"files"`
	}
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	files := make([]app.UploadFile, len(in.Files))
	for i, f := range in.Files {
		files[i] = app.UploadFile(f)
	}
	if files, err = app.CheckUploads(files, s.cfg.MaxUploadBytes); err != nil {
		fail(c, err)
		return
	}
	if !s.allow(c, "uploads:"+principal(c).ID.String(), s.limits.uploads, len(files)) {
		return
	}
	reserved, err := s.app.ReserveUploads(c.Request.Context(), principal(c).ID, p.ID, files, s.cfg.UploadURLTTL)
	if err != nil {
		fail(c, err)
		return
	}
	out := make([]uploadJSON, len(reserved))
	for i, r := range reserved {
		out[i] = uploadJSON{ClientFileID: r.ClientFileID, AssetID: r.AssetID.String(), ExpiresAt: r.Expires,
			UploadURL: r.URL, Headers: r.Headers}
	}
	c.JSON(http.StatusOK, gin.H{"uploads": out})
}

// uploadOrigins are the origins of the upload URLs prepareUpload hands out,
// for clients that send bytes nowhere else. The signer is asked for a URL
// rather than told its origin: whatever it builds (a bucket in the host
// name, a public endpoint), its URLs share one origin.
func (s *Server) uploadOrigins(ctx context.Context) []string {
	u, err := s.signer.SignPut(ctx, blob.Grant{Key: blob.OriginalKey(uuid.Nil, uuid.Nil), Expires: time.Now().Add(time.Minute),
		MaxSize: 1, ContentType: "image/jpeg"})
	if err != nil {
		return nil
	}
	parsed, err := url.Parse(u.URL)
	if err != nil || parsed.Host == "" {
		return nil
	}
	return []string{parsed.Scheme + "://" + parsed.Host}
}

// activeProject loads the caller's project from the path; archived
// projects take no new work.
func (s *Server) activeProject(c *gin.Context) (*store.Project, error) {
	id, err := pathID(c, "id")
	if err != nil {
		return nil, err
	}
	p, err := s.store.Project(c.Request.Context(), principal(c).ID, id)
	if err != nil {
		return nil, err
	}
	if p.Status != "active" {
		return nil, apiError(http.StatusConflict, "project_not_active", "The project is %s; it takes no new files.", p.Status)
	}
	return p, nil
}

var originalKey = regexp.MustCompile(`^originals/[0-9a-f-]{36}/([0-9a-f-]{36})$`)

// putBlob receives an upload through a signed URL. The signature is the
// credential: browsers PUT straight here without the API key. The bytes
// stream through SHA-256 into a temporary file and become visible only if
// the asset still waits for them.
func (s *Server) putBlob(c *gin.Context) {
	key := strings.TrimPrefix(c.Param("key"), "/")
	if blob.CheckKey(key) != nil {
		fail(c, apiError(http.StatusBadRequest, "invalid_key", "The object key is not valid."))
		return
	}
	g, err := s.verifier.Verify(http.MethodPut, key, c.Request.URL.Query(), time.Now())
	switch {
	case errors.Is(err, blob.ErrExpired):
		fail(c, apiError(http.StatusForbidden, "url_expired", "The upload URL expired at %s; prepare the upload again for a fresh one.", g.Expires.UTC().Format(time.RFC3339)))
		return
	case err != nil:
		fail(c, apiError(http.StatusForbidden, "invalid_signature", "The upload URL's signature does not match; use the URL exactly as given."))
		return
	}
	if mt, _, _ := mime.ParseMediaType(c.GetHeader("Content-Type")); mt != g.ContentType {
		fail(c, apiError(http.StatusUnsupportedMediaType, "content_type_mismatch", "This URL takes Content-Type %s.", g.ContentType))
		return
	}
	// The URL signs the size prepared, and takes exactly that many bytes,
	// as a bucket does with a presigned Content-Length.
	limit := min(g.MaxSize, s.cfg.MaxUploadBytes)
	if c.Request.ContentLength > limit {
		fail(c, apiError(http.StatusRequestEntityTooLarge, "too_large", "The body is larger than the %d bytes declared.", limit))
		return
	}
	if c.Request.ContentLength >= 0 && c.Request.ContentLength < g.MaxSize {
		fail(c, errShortBody(c.Request.ContentLength, g.MaxSize))
		return
	}
	m := originalKey.FindStringSubmatch(key)
	if m == nil {
		fail(c, apiError(http.StatusBadRequest, "invalid_key", "The object key is not valid."))
		return
	}
	info, err := s.receiveUpload(c, key, uuid.MustParse(m[1]), g.MaxSize, limit)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, gin.H{"key": key, "byteSize": info.Size, "checksumSha256": info.SHA256})
}

// errShortBody refuses a body of got bytes for an upload prepared as want.
func errShortBody(got, want int64) *Error {
	return apiError(http.StatusBadRequest, "size_mismatch", "The body is %d bytes; this URL takes the %d bytes prepared.", got, want)
}

// receiveUpload streams a body of size bytes (at most limit) into key and
// records the upload (app.ReceiveUpload). The upload lock is held while the bytes stream and
// released by the time it returns, so the next PUT of the URL finds the
// upload free. Each wait on Postgres or Redis that the answer does not
// depend on yet runs beside work that does not need it.
func (s *Server) receiveUpload(c *gin.Context, key string, asset uuid.UUID, size, limit int64) (blob.Info, error) {
	ctx := c.Request.Context()
	pending := s.checkPending(ctx, asset)
	release, err := s.lockUpload(ctx, logger(c), asset)
	if err != nil {
		// A finalized asset is refused as such, locked or not.
		if perr := <-pending; perr != nil {
			return blob.Info{}, perr
		}
		return blob.Info{}, err
	}
	unlocked := make(chan struct{})
	unlock := sync.OnceFunc(func() { go func() { release(); close(unlocked) }() })
	defer func() { unlock(); <-unlocked }()

	w, err := s.blobs.Create(ctx, key)
	if err != nil {
		return blob.Info{}, err
	}
	defer w.Abort()
	if n, err := copyLimited(c, w, limit, pending); err != nil {
		return blob.Info{}, err
	} else if n > limit {
		return blob.Info{}, apiError(http.StatusRequestEntityTooLarge, "too_large", "The body is larger than the %d bytes declared.", limit)
	} else if n < size {
		return blob.Info{}, errShortBody(n, size)
	}
	// The body is in: the lock, which guards the streaming, is released
	// while the bytes are made durable and recorded.
	unlock()
	info, err := s.app.ReceiveUpload(ctx, asset, w)
	if errors.Is(err, app.ErrFinalized) {
		err = errAlreadyFinalized()
	}
	return info, err
}

// checkPending looks up whether asset still takes bytes while the caller
// goes on: the channel gives nil if it does, else the refusal.
func (s *Server) checkPending(ctx context.Context, asset uuid.UUID) <-chan error {
	out := make(chan error, 1)
	go func() {
		a, err := s.store.AssetByID(ctx, asset)
		if err == nil && a.Status != store.AssetPendingUpload {
			err = errAlreadyFinalized()
		}
		out <- err
	}()
	return out
}

func errAlreadyFinalized() *Error {
	return apiError(http.StatusConflict, "already_finalized", "This asset has been finalized; its bytes can no longer change.")
}

// copyLimited copies the request body into w, reading one byte past limit
// so the caller can tell a body that is too long. It stops as soon as
// pending gives a refusal, and returns only once pending has answered.
func copyLimited(c *gin.Context, w blob.Writer, limit int64, pending <-chan error) (int64, error) {
	buf := make([]byte, 256<<10)
	var n int64
	for n <= limit {
		select {
		case err := <-pending:
			if err != nil {
				return n, err
			}
			pending = nil
		default:
		}
		k, err := c.Request.Body.Read(buf[:min(int64(len(buf)), limit+1-n)])
		if k > 0 {
			if _, werr := w.Write(buf[:k]); werr != nil {
				return n, werr
			}
			n += int64(k)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var stalled *Error // the body stopped arriving (idleBody)
			if errors.As(err, &stalled) {
				return n, stalled
			}
			return n, apiError(http.StatusBadRequest, "upload_interrupted", "The upload ended before all bytes arrived.")
		}
	}
	if pending != nil {
		return n, <-pending
	}
	return n, nil
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

type finalizeAssetJSON struct {
	AssetID     string     `json:"assetId"`
	Status      string     `json:"status"`
	DuplicateOf *uuid.UUID `json:"duplicateOf,omitempty"`
	Error       *errorJSON `json:"error,omitempty"`
}

type errorJSON struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// finalizeUpload accepts uploaded assets: see store.FinalizeUploads. The
// jobs are committed to Postgres before they are enqueued, so an enqueue
// lost to a Redis outage is found and repeated by the sweeper.
func (s *Server) finalizeUpload(c *gin.Context) {
	p, err := s.activeProject(c)
	if err != nil {
		fail(c, err)
		return
	}
	var in struct {
		Assets []struct {
			AssetID        uuid.UUID `json:"assetId"`
			ChecksumSHA256 string    `json:"checksumSha256"`
			ContentType    string    `json:"contentType"`
		} `json:"assets"`
	}
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	errs := app.FieldErrors{}
	if len(in.Assets) == 0 || len(in.Assets) > app.MaxFilesPerCall {
		errs.Add("assets", fmt.Sprintf("must list 1 to %d assets", app.MaxFilesPerCall))
	}
	items := make([]store.FinalizeItem, len(in.Assets))
	seen := map[uuid.UUID]bool{}
	for i, a := range in.Assets {
		if !sha256Hex.MatchString(a.ChecksumSHA256) {
			errs.Add(fmt.Sprintf("assets[%d].checksumSha256", i), "must be 64 lowercase hex digits")
		}
		if seen[a.AssetID] {
			errs.Add(fmt.Sprintf("assets[%d].assetId", i), "is listed twice")
		}
		seen[a.AssetID] = true
		items[i] = store.FinalizeItem{AssetID: a.AssetID, Checksum: a.ChecksumSHA256}
	}
	if err := errs.Err(); err != nil {
		fail(c, err)
		return
	}

	res, err := s.app.Finalize(c.Request.Context(), logger(c), principal(c).ID, p.ID, items, nil)
	if err != nil {
		switch {
		case errors.Is(err, app.ErrStorage):
			logger(c).Error("finalize could not check the uploads", "err", err)
			err = apiError(http.StatusServiceUnavailable, "storage_unavailable", "The uploads could not be checked in storage; retry the same call.")
		case !errors.Is(err, store.ErrNotFound):
			logger(c).Error("finalize not recorded", "err", err)
			err = apiError(http.StatusServiceUnavailable, "queue_unavailable", "The work could not be recorded; retry the same call.")
		}
		fail(c, err)
		return
	}
	out := make([]finalizeAssetJSON, len(res.Assets))
	for i, a := range res.Assets {
		out[i] = finalizeAssetJSON{AssetID: a.AssetID.String(), Status: a.Status, DuplicateOf: a.DuplicateOf}
		if a.ErrorCode != "" {
			out[i].Error = &errorJSON{Code: a.ErrorCode, Message: a.ErrorMessage}
		}
	}
	jobs := make([]string, len(res.Jobs))
	for i, j := range res.Jobs {
		jobs[i] = j.String()
	}
	c.JSON(http.StatusOK, gin.H{"queuedJobs": jobs, "batchId": res.BatchID, "assets": out})
}
