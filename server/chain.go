package server

import (
	"context"
	"errors"
	"math"
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
	if !s.cidVisible(c.Request.Context(), principal(c), h.Seq) {
		h.CID = ""
	}
	c.JSON(http.StatusOK, h)
}

// cidVisible reports whether p may see the cid of the chain entry at seq:
// a cid is the SHA-256 of a private original, so only admins and the
// asset's owner see it (seq 0 is the genesis, which is no one's).
func (s *Server) cidVisible(ctx context.Context, p *store.Principal, seq int64) bool {
	if p.IsAdmin || seq < 1 {
		return true
	}
	r, err := s.store.AttestationBySeq(ctx, seq)
	if err != nil || r.AssetID == nil {
		return false
	}
	_, err = s.store.Asset(ctx, p.ID, *r.AssetID)
	return err == nil
}

func (s *Server) chainPublicKey(c *gin.Context) {
	c.JSON(http.StatusOK, s.chainKeys.Describe())
}

// maxVerifyRange is the most chain entries one verify call reads unless an
// admin names the range: checking costs a read and a signature check per
// entry, and the chain only grows.
const maxVerifyRange = 10_000

// chainVerify checks every signature, tx id and link in a seq range and
// names the first broken record. Without a range it checks the newest
// maxVerifyRange entries; a longer range is an admin's to ask for.
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
	switch {
	case from > 0 && to > 0:
		if to-from >= maxVerifyRange && !principal(c).IsAdmin {
			fail(c, apiError(http.StatusBadRequest, "range_too_large", "At most %d entries are verified per call; ask for fromSeq..toSeq in parts.", maxVerifyRange).
				with("fields", map[string]string{"toSeq": "must be less than fromSeq + " + strconv.Itoa(maxVerifyRange)}))
			return
		}
	case from > 0:
		to = from + min(maxVerifyRange-1, math.MaxInt64-from) // not past the largest seq
	default:
		if to == 0 {
			h, err := chain.ReadHead(c.Request.Context(), s.store)
			if err != nil {
				fail(c, err)
				return
			}
			to = h.Seq
		}
		from = max(1, to-maxVerifyRange+1)
	}
	res, err := chain.Verify(c.Request.Context(), s.store, s.chainKeys, from, to)
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
	att, err := chain.AttestationOf(c.Request.Context(), s.store, s.chainKeys, a.ID)
	if errors.Is(err, store.ErrNotFound) {
		err = apiError(http.StatusNotFound, "not_attested", "This asset has no attestation: it was never finalized as a new original.")
	}
	if err != nil {
		fail(c, err)
		return
	}
	if r := att.Record; r != nil && !s.cidVisible(c.Request.Context(), principal(c), r.Seq-1) {
		// The previous entry is someone else's: its cid is in the link and
		// in the signed bytes, so both stay out.
		r.PrevCID, r.Statement.Attestation.PrevCID, r.Payload = "", "", nil
	}
	c.JSON(http.StatusOK, att)
}
