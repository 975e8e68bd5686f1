package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/bsm/redislock"
	"github.com/gin-gonic/gin"

	"lightbox/app"
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
// entry (about 90 µs of CPU), and the chain only grows. Without a range a
// call checks defaultVerifyRange entries.
const (
	maxVerifyRange     = 10_000
	defaultVerifyRange = 1_000
)

// verifyKeep is how long a verification's outcome is kept. It is keyed by
// the chain's state (chain.Span), so it never outlives a change; this only
// lets outcomes of states gone by leave Redis.
const verifyKeep = time.Hour

// chainVerify checks every signature, tx id and link in a seq range and
// names the first broken record. Without a range it checks the newest
// defaultVerifyRange entries, from fromSeq alone as many; a range longer
// than maxVerifyRange is an admin's to ask for.
func (s *Server) chainVerify(c *gin.Context) {
	var from, to int64
	errs := app.FieldErrors{}
	for name, dst := range map[string]*int64{"fromSeq": &from, "toSeq": &to} {
		if v := c.Query(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 {
				errs.Add(name, "must be a whole number of at least 1")
			}
			*dst = n
		}
	}
	if err := errs.Err(); err != nil {
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
		to = from + min(defaultVerifyRange-1, math.MaxInt64-from) // not past the largest seq
	default:
		if to == 0 {
			h, err := chain.ReadHead(c.Request.Context(), s.store)
			if err != nil {
				fail(c, err)
				return
			}
			to = h.Seq
		}
		from = max(1, to-defaultVerifyRange+1)
	}
	release, err := s.oneVerification(c)
	if err != nil {
		fail(c, err)
		return
	}
	defer release()
	res, err := s.verifyKept(c.Request.Context(), logger(c), from, to)
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

// oneVerification lets each user run one verification at a time, across
// every server process; another while it runs is 429 busy. A refusal
// rather than a wait: a waiting request would hold a connection and a
// goroutine on the server, which is what an attacker piles up, and would
// need the result handed between processes. Once the first ends, the
// retry finds its outcome kept and costs one indexed read.
func (s *Server) oneVerification(c *gin.Context) (release func(), err error) {
	release, err = s.hold(c.Request.Context(), logger(c), "lightbox:chain-verify-lock:"+principal(c).ID.String())
	if errors.Is(err, redislock.ErrNotObtained) {
		s.metrics.verifications.WithLabelValues("busy").Inc()
		return nil, retryLater(c, time.Second, "busy", "A chain verification of yours is running, and its outcome will be kept")
	}
	return release, err
}

// verifyKept verifies from..to, or answers the outcome kept in Redis for
// the chain exactly as it stands, which every server shares.
func (s *Server) verifyKept(ctx context.Context, log *slog.Logger, from, to int64) (chain.VerifyResult, error) {
	span, err := chain.SpanOf(ctx, s.store, s.chainKeys, from, to)
	if err != nil {
		return chain.VerifyResult{}, err
	}
	key := "lightbox:chain-verify:" + span.State
	var res chain.VerifyResult
	if b, err := s.rdb.Get(ctx, key).Bytes(); err == nil && json.Unmarshal(b, &res) == nil {
		s.metrics.verifications.WithLabelValues("kept").Inc()
		return res, nil
	}
	res, err = chain.VerifySpan(ctx, s.store, s.chainKeys, span)
	if err != nil {
		return res, err
	}
	s.metrics.verifications.WithLabelValues("ran").Inc()
	b, _ := json.Marshal(res)
	if err := s.rdb.Set(context.WithoutCancel(ctx), key, b, verifyKeep).Err(); err != nil {
		log.Warn("keep chain verification", "err", err)
	}
	return res, nil
}

func (s *Server) assetAttestation(c *gin.Context) {
	a, err := s.ownAsset(c)
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
