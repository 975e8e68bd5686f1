package server

import (
	"errors"
	"mime"
	"net/http"
	"slices"

	"github.com/gin-gonic/gin"

	"lightbox/store"
	"lightbox/xmp"
)

// sidecarTypes are the Content-Types a sidecar is taken with.
var sidecarTypes = []string{"application/rdf+xml", "application/xml", "text/xml"}

// routeSidecars registers the routes of an asset's XMP sidecar.
func (s *Server) routeSidecars(api gin.IRoutes) {
	api.PUT("/assets/:id/sidecar", s.putSidecar)
	api.GET("/assets/:id/sidecar", s.getSidecar)
}

// putSidecar takes the XMP sidecar of an asset (app.PutSidecar). A packet
// the service refuses is answered 200 with applied false and its reason
// in warnings: a bad sidecar fails nothing of the photo.
func (s *Server) putSidecar(c *gin.Context) {
	a, err := s.ownAsset(c)
	if err != nil {
		fail(c, err)
		return
	}
	if t, _, _ := mime.ParseMediaType(c.ContentType()); !slices.Contains(sidecarTypes, t) {
		fail(c, apiError(http.StatusUnsupportedMediaType, "unsupported_media_type",
			"An XMP sidecar is sent as application/rdf+xml, application/xml or text/xml."))
		return
	}
	tooLarge := func() *Error {
		return apiError(http.StatusRequestEntityTooLarge, "sidecar_too_large", "An XMP sidecar may be at most %d bytes.", xmp.MaxPacket)
	}
	if c.Request.ContentLength > xmp.MaxPacket {
		fail(c, tooLarge())
		return
	}
	packet, err := readBody(c, xmp.MaxPacket)
	var apiErr *Error
	switch {
	case errors.As(err, &apiErr) && apiErr.Status == http.StatusRequestEntityTooLarge:
		fail(c, tooLarge())
		return
	case err != nil:
		fail(c, err)
		return
	case len(packet) == 0:
		fail(c, apiError(http.StatusBadRequest, "empty_sidecar", "The body is empty; send the sidecar's bytes."))
		return
	}
	out, err := s.app.PutSidecar(c.Request.Context(), logger(c), s.blobs, principal(c).ID, a.ID, packet)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

// getSidecar answers with the bytes of an asset's sidecar as they were put.
func (s *Server) getSidecar(c *gin.Context) {
	a, err := s.ownAsset(c)
	if err != nil {
		fail(c, err)
		return
	}
	f, err := s.store.Sidecar(c.Request.Context(), a.ID)
	if errors.Is(err, store.ErrNoSidecar) {
		fail(c, apiError(http.StatusNotFound, "sidecar_not_found", "The asset has no XMP sidecar."))
		return
	}
	if err != nil {
		fail(c, err)
		return
	}
	r, info, err := s.blobs.Open(c.Request.Context(), f.BlobKey)
	if err != nil {
		fail(c, err)
		return
	}
	defer r.Close()
	c.Header("X-Content-Type-Options", "nosniff")
	c.DataFromReader(http.StatusOK, info.Size, f.ContentType, r, nil)
}
