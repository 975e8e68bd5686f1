package server

import (
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"lightbox/app"
	"lightbox/blob"
	"lightbox/store"
)

// importURLs records a batch of asset:download jobs, one per URL. The
// worker checks each address when it fetches (that is where DNS answers),
// so here a URL only needs to be a well-formed http(s) URL.
func (s *Server) importURLs(c *gin.Context) {
	p, err := s.activeProject(c)
	if err != nil {
		fail(c, err)
		return
	}
	var in struct {
		URLs []string `json:"urls"`
	}
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	errs := app.FieldErrors{}
	if len(in.URLs) == 0 || len(in.URLs) > app.MaxFilesPerCall {
		errs.Add("urls", fmt.Sprintf("must list 1 to %d URLs", app.MaxFilesPerCall))
	}
	items := make([]store.NewImport, len(in.URLs))
	for i, raw := range in.URLs {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !utf8.ValidString(u.Host) || len(raw) > 2048 || u.User != nil {
			errs.Add(fmt.Sprintf("urls[%d]", i), "must be an http or https URL without credentials, at most 2048 characters")
			continue
		}
		id := uuid.New()
		// A path may name bytes that are not UTF-8 (%ff): the name keeps
		// the rest, its extension too.
		name := strings.ToValidUTF8(path.Base(u.Path), "\uFFFD")
		if name == "/" || name == "." || app.CheckFilename(name) != "" {
			name = u.Hostname()
		}
		items[i] = store.NewImport{AssetID: id, URL: raw, Filename: name, BlobKey: blob.OriginalKey(p.ID, id)}
	}
	if err := errs.Err(); err != nil {
		fail(c, err)
		return
	}
	if !s.allow(c, "uploads:"+principal(c).ID.String(), s.limits.uploads, len(items)) {
		return
	}
	recorded, err := s.app.Import(c.Request.Context(), principal(c).ID, p.ID, items)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, gin.H{"batchId": recorded[0].BatchID, "queuedJobs": jobIDs(recorded)})
}
