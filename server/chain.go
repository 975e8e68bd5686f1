package server

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"lightbox/chain"
	"lightbox/store"
)

func (s *Server) chainHead(c *gin.Context) {
	h, err := chain.ReadHead(c.Request.Context(), s.store)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, h)
}

func (s *Server) chainPublicKey(c *gin.Context) {
	c.JSON(http.StatusOK, chain.DescribePublicKey(s.chainKey))
}

// chainVerify checks every signature, tx id and link in a seq range (the
// whole chain by default) and names the first broken record.
func (s *Server) chainVerify(c *gin.Context) {
	var from, to int64
	errs := fieldErrors{}
	for name, dst := range map[string]*int64{"fromSeq": &from, "toSeq": &to} {
		if v := c.Query(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 {
				errs.add(name, "must be a whole number of at least 1")
			}
			*dst = n
		}
	}
	if err := errs.err(); err != nil {
		fail(c, err)
		return
	}
	res, err := chain.Verify(c.Request.Context(), s.store, s.chainKey, from, to)
	var ce *chain.Error
	if errors.As(err, &ce) {
		err = apiError(http.StatusBadRequest, "validation_failed", "%s", ce.Message).with("fields", map[string]string{"fromSeq": ce.Message})
	}
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, res)
}

func (s *Server) assetAttestation(c *gin.Context) {
	a, _, err := s.ownAsset(c)
	if err != nil {
		fail(c, err)
		return
	}
	att, err := chain.AttestationOf(c.Request.Context(), s.store, s.chainKey, a.ID)
	if errors.Is(err, store.ErrNotFound) {
		err = apiError(http.StatusNotFound, "not_attested", "This asset has no attestation: it was never finalized as a new original.")
	}
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, att)
}
