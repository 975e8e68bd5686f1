package server

// Quotas, as enforced here:
//
//   - bytes: originals kept (accepted uploads, including those whose
//     processing failed) and export archives kept (done, not yet expired),
//     plus the declared sizes of uploads in flight. A prepare that would
//     pass it is 403 quota_exceeded, and so is an import or an export once
//     it is reached.
//   - filesInFlight: uploads prepared but neither finalized nor expired.
//     They free themselves as uploads finish or expire, so passing it is
//     429 quota_exceeded with Retry-After until the first one expires.
//   - exports: exports queued, running, or done and not yet expired. A new
//     export past it is 403 quota_exceeded; cancel one or wait for expiry.
//
// A user's own limit (users.quota_*) wins over the QUOTA_* default; 0 is no
// limit. Details name the quota, its limit, what is used and what the
// request asked for. Checks run under a lock of the user's row, so two
// requests cannot both take the last of a quota.

import (
	"net/http"
	"strconv"
	"time"

	"lightbox/app"
	"lightbox/config"
	"lightbox/store"
)

type quotaJSON struct {
	Limit *int64 `json:"limit"` // null: no limit
	Used  int64  `json:"used"`
}

type bytesQuotaJSON struct {
	quotaJSON
	Stored   int64 `json:"stored"`
	Exports  int64 `json:"exports"`
	InFlight int64 `json:"inFlight"`
}

type quotasJSON struct {
	Bytes         bytesQuotaJSON `json:"bytes"`
	FilesInFlight quotaJSON      `json:"filesInFlight"`
	Exports       quotaJSON      `json:"exports"`
}

// quotaDefaults are the limits of a user with none of their own (QUOTA_*);
// 0 is none.
func quotaDefaults(c *config.Config) store.Limits {
	return store.Limits{Bytes: c.QuotaBytes, FilesInFlight: int64(c.QuotaFilesInFlight), Exports: int64(c.QuotaExports)}
}

// quotasOf are the limits that apply to u's user; 0 is none.
func (s *Server) quotasOf(u *store.Usage) store.Limits { return u.Limits(quotaDefaults(s.cfg)) }

func limitJSON(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}

func (s *Server) toQuotasJSON(u *store.Usage) quotasJSON {
	q := s.quotasOf(u)
	return quotasJSON{
		Bytes: bytesQuotaJSON{quotaJSON: quotaJSON{Limit: limitJSON(q.Bytes), Used: u.BytesUsed()},
			Stored: u.BytesStored, Exports: u.ExportBytes, InFlight: u.BytesInFlight},
		FilesInFlight: quotaJSON{Limit: limitJSON(q.FilesInFlight), Used: int64(u.FilesInFlight)},
		Exports:       quotaJSON{Limit: limitJSON(q.Exports), Used: int64(u.Exports)},
	}
}

func errQuota(status int, quota string, limit, used, requested int64, format string, args ...any) *Error {
	return apiError(status, "quota_exceeded", format, args...).
		with("quota", quota).with("limit", limit).with("used", used).with("requested", requested)
}

// quotaRefusal answers q, a request refused by one of the user's quotas.
// It sets Retry-After on h when waiting for uploads in flight to expire
// would help.
func quotaRefusal(h http.Header, q *app.QuotaError) *Error {
	switch {
	case q.For == app.ForImport:
		return errQuota(http.StatusForbidden, q.Quota, q.Limit, q.Used, 0,
			"This account holds %d of the %d bytes it may; delete photos before importing more.", q.Used, q.Limit)
	case q.For == app.ForExport && q.Quota == store.QuotaBytes:
		return errQuota(http.StatusForbidden, q.Quota, q.Limit, q.Used, 0,
			"This account holds %d of the %d bytes it may, exports included; delete photos or an export first.", q.Used, q.Limit)
	case q.For == app.ForExport:
		return errQuota(http.StatusForbidden, q.Quota, q.Limit, q.Used, q.Requested,
			"This account has %d of its %d exports queued, running or kept; cancel one or wait for one to expire.", q.Used, q.Limit)
	case q.Quota == store.QuotaBytes:
		return errQuota(http.StatusForbidden, q.Quota, q.Limit, q.Used, q.Requested,
			"These files need %d bytes; %d of the %d bytes this account may hold are used or on their way.", q.Requested, q.Used, q.Limit)
	case q.Requested > q.Limit:
		// No wait makes it fit: say so, and how many do.
		return errQuota(http.StatusTooManyRequests, q.Quota, q.Limit, q.Used, q.Requested,
			"This asks for %d uploads at once; at most %d may be in flight, so send at most %d per request.", q.Requested, q.Limit, q.Limit).
			with("retryAfter", nil).with("maxAtOnce", q.Limit)
	}
	e := errQuota(http.StatusTooManyRequests, q.Quota, q.Limit, q.Used, q.Requested,
		"%d uploads are in flight, at most %d may be; finalize them or wait for them to expire.", q.Used, q.Limit)
	retry := 1
	if q.NextExpiry != nil {
		retry = max(1, ceilSeconds(time.Until(*q.NextExpiry)))
	}
	h.Set("Retry-After", strconv.Itoa(retry))
	return e.with("retryAfter", retry)
}
