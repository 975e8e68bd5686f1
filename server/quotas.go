package server

// Quotas, as enforced here:
//
//   - bytes: originals kept (accepted uploads, including those whose
//     processing failed) plus the declared sizes of uploads in flight. A
//     prepare that would pass it is 403 quota_exceeded.
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

	"lightbox/store"
)

type quotaJSON struct {
	Limit *int64 `json:"limit"` // null: no limit
	Used  int64  `json:"used"`
}

type bytesQuotaJSON struct {
	quotaJSON
	Stored   int64 `json:"stored"`
	InFlight int64 `json:"inFlight"`
}

type quotasJSON struct {
	Bytes         bytesQuotaJSON `json:"bytes"`
	FilesInFlight quotaJSON      `json:"filesInFlight"`
	Exports       quotaJSON      `json:"exports"`
}

// quotasOf are the limits that apply to u's user; 0 is none.
func (s *Server) quotasOf(u *store.Usage) store.Limits {
	return u.Limits(store.Limits{Bytes: s.cfg.QuotaBytes, FilesInFlight: int64(s.cfg.QuotaFilesInFlight), Exports: int64(s.cfg.QuotaExports)})
}

func limitJSON(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}

func (s *Server) toQuotasJSON(u *store.Usage) quotasJSON {
	q := s.quotasOf(u)
	return quotasJSON{
		Bytes: bytesQuotaJSON{quotaJSON: quotaJSON{Limit: limitJSON(q.Bytes), Used: u.BytesStored + u.BytesInFlight},
			Stored: u.BytesStored, InFlight: u.BytesInFlight},
		FilesInFlight: quotaJSON{Limit: limitJSON(q.FilesInFlight), Used: int64(u.FilesInFlight)},
		Exports:       quotaJSON{Limit: limitJSON(q.Exports), Used: int64(u.Exports)},
	}
}

func errQuota(status int, quota string, limit, used, requested int64, format string, args ...any) *Error {
	return apiError(status, "quota_exceeded", format, args...).
		with("quota", quota).with("limit", limit).with("used", used).with("requested", requested)
}

// checkUploadQuotas refuses files of bytes in all when they would pass the
// user's bytes or files-in-flight quota. It sets Retry-After on h when
// waiting for uploads in flight to expire would help.
func (s *Server) checkUploadQuotas(h http.Header, u *store.Usage, files int, bytes int64) error {
	q := s.quotasOf(u)
	if used := u.BytesStored + u.BytesInFlight; q.Bytes > 0 && used+bytes > q.Bytes {
		return errQuota(http.StatusForbidden, "bytes", q.Bytes, used, bytes,
			"These files need %d bytes; %d of the %d bytes this account may hold are used or on their way.", bytes, used, q.Bytes)
	}
	if used := int64(u.FilesInFlight); q.FilesInFlight > 0 && used+int64(files) > q.FilesInFlight {
		if int64(files) > q.FilesInFlight {
			// No wait makes it fit: say so, and how many do.
			return errQuota(http.StatusTooManyRequests, "filesInFlight", q.FilesInFlight, used, int64(files),
				"This asks for %d uploads at once; at most %d may be in flight, so send at most %d per request.", files, q.FilesInFlight, q.FilesInFlight).
				with("retryAfter", nil).with("maxAtOnce", q.FilesInFlight)
		}
		e := errQuota(http.StatusTooManyRequests, "filesInFlight", q.FilesInFlight, used, int64(files),
			"%d uploads are in flight, at most %d may be; finalize them or wait for them to expire.", used, q.FilesInFlight)
		retry := 1
		if u.NextExpiry != nil {
			retry = max(1, ceilSeconds(time.Until(*u.NextExpiry)))
		}
		h.Set("Retry-After", strconv.Itoa(retry))
		return e.with("retryAfter", retry)
	}
	return nil
}

// checkExportQuota refuses one more export past the user's exports quota.
func (s *Server) checkExportQuota(u *store.Usage) error {
	if q := s.quotasOf(u); q.Exports > 0 && int64(u.Exports)+1 > q.Exports {
		return errQuota(http.StatusForbidden, "exports", q.Exports, int64(u.Exports), 1,
			"This account has %d of its %d exports queued, running or kept; cancel one or wait for one to expire.", u.Exports, q.Exports)
	}
	return nil
}
