package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"
	"github.com/hibiken/asynqmon"

	"lightbox/imaging/formats"
	"lightbox/redisconn"
	"lightbox/web"
)

// page is one embedded file ready to serve, with a strong ETag so browsers
// revalidate cheaply after a deploy changes it.
type page struct {
	body        []byte
	contentType string
	etag        string
}

var (
	pagesOnce sync.Once
	pages     map[string]page // by path inside web.Files
)

func loadPages() {
	pages = map[string]page{}
	fs.WalkDir(web.Files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(web.Files, p)
		if err != nil {
			return err
		}
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = "application/octet-stream"
		}
		pages[p] = newPage(b, ct)
		return nil
	})
	// The page's uploader reads the accepted formats from the table the
	// server checks uploads against, so the two cannot drift.
	b, _ := json.Marshal(struct {
		Types []formats.Accepted `json:"types"`
		Names string             `json:"names"`
	}{formats.All(), formats.Names})
	pages["static/formats.json"] = newPage(b, "application/json")
}

// newPage is b served as contentType, with a strong ETag.
func newPage(b []byte, contentType string) page {
	sum := sha256.Sum256(b)
	return page{body: b, contentType: contentType, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
}

// servePage writes an embedded file. The pages are public: what they show
// comes from API calls, which need a session.
func (s *Server) servePage(c *gin.Context, name string) {
	pagesOnce.Do(loadPages)
	p, ok := pages[name]
	if !ok {
		fail(c, errNoRoute())
		return
	}
	h := c.Writer.Header()
	h.Set("Content-Type", p.contentType)
	h.Set("ETag", p.etag)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", s.contentPolicy())
	if c.GetHeader("If-None-Match") == p.etag {
		c.Status(http.StatusNotModified)
		return
	}
	c.Data(http.StatusOK, p.contentType, p.body)
}

// contentPolicy allows scripts and styles from this origin only. Images
// and uploads may go to PUBLIC_URL, where signed URLs point, when the
// pages are reached under another name (a proxy, a LAN address), and to
// wherever the blob signer's URLs lead (an S3 bucket's host).
func (s *Server) contentPolicy() string {
	var origins []string
	if u, err := url.Parse(s.cfg.PublicURL); err == nil && u.Host != "" {
		origins = append(origins, u.Scheme+"://"+u.Host)
	}
	if s.signer != nil {
		if o := s.signer.Origin(); o != "" && !slices.Contains(origins, o) {
			origins = append(origins, o)
		}
	}
	blobs := ""
	for _, o := range origins {
		blobs += " " + o
	}
	return "default-src 'self'; script-src 'self'; worker-src 'self'; style-src 'self'; " +
		"img-src 'self' data: blob:" + blobs + "; connect-src 'self'" + blobs + "; " +
		"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
}

func (s *Server) appPage(c *gin.Context)   { s.servePage(c, "index.html") }
func (s *Server) adminPage(c *gin.Context) { s.servePage(c, "admin.html") }

func (s *Server) staticFile(c *gin.Context) {
	name := strings.TrimPrefix(c.Param("path"), "/")
	if name == "" || strings.Contains(name, "..") {
		fail(c, errNotFound())
		return
	}
	s.servePage(c, "static/"+name)
}

// adminOnlyPage lets only admins reach the operator pages, by the session
// cookie the admin page signed in with (or a Bearer key). A browser that
// is not signed in is sent to /admin, which shows the sign-in form.
func (s *Server) adminOnlyPage(c *gin.Context) {
	p, err := s.principalFrom(c)
	if err == nil && !p.IsAdmin {
		err = apiError(http.StatusForbidden, "forbidden", "This needs an administrator.")
	}
	if err != nil {
		if c.Request.Method == http.MethodGet && strings.Contains(c.GetHeader("Accept"), "text/html") {
			c.Redirect(http.StatusSeeOther, "/admin")
			c.Abort()
			return
		}
		fail(c, err)
		return
	}
	// The cookie is SameSite=Strict already; refusing foreign origins on
	// writes also covers browsers that ignore it.
	if s.crossOrigin(c.Request) {
		fail(c, errCrossOrigin())
		return
	}
	c.Set(ctxPrincipal, p)
	c.Next()
}

// asynqmon serves Asynqmon under /admin/queues, read-write. It is built on
// first use, so a server nobody opens it on holds no extra connections.
func (s *Server) asynqmon() gin.HandlerFunc {
	var (
		once    sync.Once
		monitor http.Handler
	)
	return func(c *gin.Context) {
		once.Do(func() {
			conn, err := redisconn.Parse(s.cfg.RedisURL)
			if err != nil {
				s.log.Error("asynqmon", "err", err)
				return
			}
			monitor = asynqmon.New(asynqmon.Options{
				RootPath:         "/admin/queues",
				RedisConnOpt:     conn.Asynq(),
				PayloadFormatter: asynqmon.PayloadFormatterFunc(formatJSON),
				ResultFormatter:  asynqmon.ResultFormatterFunc(formatJSON),
			})
		})
		if monitor == nil {
			fail(c, apiError(http.StatusServiceUnavailable, "queue_unavailable", "The queue dashboard cannot reach Redis."))
			return
		}
		monitor.ServeHTTP(c.Writer, c.Request)
	}
}

// formatJSON shows a task's JSON payload or result indented; anything
// else as Asynqmon would. Most tasks have no result: that shows as nothing
// rather than Asynqmon's "non-printable bytes".
func formatJSON(_ string, b []byte) string {
	if len(b) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if json.Indent(&buf, b, "", "  ") != nil {
		return asynqmon.DefaultPayloadFormatter.FormatPayload("", b)
	}
	return buf.String()
}
