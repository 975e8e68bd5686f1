package server

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/gin-gonic/gin"
)

// openAPIYAML is the API's description, written by hand next to the
// handlers it describes; the server tests hold every answer to it.
//
//go:embed openapi.yaml
var openAPIYAML []byte

// openAPIJSON is the document as served: parsed once, as JSON, with a
// strong ETag.
var openAPIJSON = sync.OnceValues(func() (page, error) {
	doc, err := openapi3.NewLoader().LoadFromData(openAPIYAML)
	if err != nil {
		return page{}, fmt.Errorf("openapi.yaml: %w", err)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return page{}, fmt.Errorf("openapi.yaml: %w", err)
	}
	sum := sha256.Sum256(b)
	return page{body: b, contentType: "application/json; charset=utf-8", etag: `"` + hex.EncodeToString(sum[:12]) + `"`}, nil
})

// openAPI serves the document to anyone: it describes routes, not data.
func (s *Server) openAPI(c *gin.Context) {
	p, err := openAPIJSON()
	if err != nil {
		fail(c, err)
		return
	}
	h := c.Writer.Header()
	h.Set("ETag", p.etag)
	h.Set("Cache-Control", "public, max-age=3600")
	if c.GetHeader("If-None-Match") == p.etag {
		c.Status(http.StatusNotModified)
		return
	}
	c.Data(http.StatusOK, p.contentType, p.body)
}
