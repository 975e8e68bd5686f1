package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Usage is what a user holds against their quotas, and the limits set on
// the user itself (nil: the configured default; 0: none).
type Usage struct {
	// BytesStored counts the originals kept: accepted uploads, including
	// those whose processing failed.
	BytesStored int64 `db:"bytes_stored"`
	// FilesInFlight and BytesInFlight count uploads prepared but neither
	// finalized nor expired, with their declared sizes, and URL imports
	// fetched but not yet finalized.
	FilesInFlight int   `db:"files_in_flight"`
	BytesInFlight int64 `db:"bytes_in_flight"`
	// NextExpiry is when the first upload in flight expires, if any.
	NextExpiry *time.Time `db:"next_expiry"`
	// Exports counts exports queued, running, or done and not yet expired.
	Exports int `db:"exports"`
	// ExportBytes counts the archives of exports done and not yet expired:
	// they are kept in storage as originals are.
	ExportBytes int64 `db:"export_bytes"`

	QuotaBytes         *int64 `db:"quota_bytes"`
	QuotaFilesInFlight *int   `db:"quota_files_in_flight"`
	QuotaExports       *int   `db:"quota_exports"`
}

// usageQuery reads a user's Usage in one statement. Stored bytes are a
// counter kept by a trigger on assets; uploads in flight and live exports
// are few, and found through partial indexes.
const usageQuery = `
	SELECT coalesce(uu.bytes_stored, 0) AS bytes_stored, f.files_in_flight, f.bytes_in_flight, f.next_expiry,
		x.exports, x.export_bytes, u.quota_bytes, u.quota_files_in_flight, u.quota_exports
	FROM users u
	LEFT JOIN user_usage uu ON uu.user_id = u.id
	CROSS JOIN LATERAL (
		SELECT count(*) AS exports, coalesce(sum(e.byte_size) FILTER (WHERE e.status = 'done'), 0) AS export_bytes
		FROM exports e
		WHERE e.user_id = u.id AND e.status IN ('queued', 'running', 'done')
		  AND (e.status <> 'done' OR e.expires_at IS NULL OR e.expires_at > now())
		  AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = e.job_id AND j.status = 'canceled')
	) x
	CROSS JOIN LATERAL (
		SELECT count(*) AS files_in_flight, coalesce(sum(a.byte_size), 0) AS bytes_in_flight,
			min(a.upload_expires_at) AS next_expiry
		FROM projects p JOIN assets a ON a.project_id = p.id
		WHERE p.owner_user_id = u.id AND a.status = 'pending_upload'
		  AND (a.upload_expires_at > now() OR (a.upload_expires_at IS NULL AND a.upload_size IS NOT NULL))
	) f
	WHERE u.id = $1`

// Usage reads what user holds against their quotas.
func (s *Store) Usage(ctx context.Context, user uuid.UUID) (*Usage, error) {
	u := &Usage{}
	return u, notFound(s.db.GetContext(ctx, u, usageQuery, user))
}

// WithUsage runs fn in a transaction holding user's row, with the user's
// usage read under that lock, so that concurrent requests of one user
// check their quotas one after the other and cannot both take the last of
// one.
func (s *Store) WithUsage(ctx context.Context, user uuid.UUID, fn func(tx *Store, u *Usage) error) error {
	return s.WithTx(ctx, func(tx *Store) error {
		// The lock is its own statement: a statement that waits for a lock
		// still reads the other tables as they were when it began, so one
		// that locked and summed at once would miss the bytes recorded by
		// the transaction it waited for.
		if _, err := tx.db.ExecContext(ctx, `SELECT 1 FROM users WHERE id = $1 FOR NO KEY UPDATE`, user); err != nil {
			return err
		}
		u := &Usage{}
		if err := tx.db.GetContext(ctx, u, usageQuery, user); err != nil {
			return notFound(err)
		}
		return fn(tx, u)
	})
}

// Limits are the quota limits that apply to a user; 0 is none.
type Limits struct {
	Bytes, FilesInFlight, Exports int64
}

// Quotas, by the names answers give them.
const (
	QuotaBytes         = "bytes"         // originals and export archives kept, plus the declared sizes of uploads in flight
	QuotaFilesInFlight = "filesInFlight" // uploads prepared but neither finalized nor expired
	QuotaExports       = "exports"       // exports queued, running, or done and not yet expired
)

// QuotaError is a request that would pass one of its user's quotas: it
// asks for Requested more where Used of Limit are taken.
type QuotaError struct {
	Quota                  string // QuotaBytes, QuotaFilesInFlight or QuotaExports
	Limit, Used, Requested int64
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("store: %d more would pass the %s quota of %d, %d used", e.Requested, e.Quota, e.Limit, e.Used)
}

// CheckUpload reports, as a *QuotaError, whether files more uploads of
// bytes in all would pass l: the bytes quota first, then the uploads in
// flight (which free themselves as uploads finish or expire).
func (u *Usage) CheckUpload(l Limits, files int, bytes int64) error {
	if used := u.BytesUsed(); l.Bytes > 0 && used+bytes > l.Bytes {
		return &QuotaError{Quota: QuotaBytes, Limit: l.Bytes, Used: used, Requested: bytes}
	}
	if used := int64(u.FilesInFlight); l.FilesInFlight > 0 && used+int64(files) > l.FilesInFlight {
		return &QuotaError{Quota: QuotaFilesInFlight, Limit: l.FilesInFlight, Used: used, Requested: int64(files)}
	}
	return nil
}

// CheckImport reports whether an account is at its bytes quota already,
// so takes no URL import: the sizes are known only once fetched.
func (u *Usage) CheckImport(l Limits) error {
	if used := u.BytesUsed(); l.Bytes > 0 && used >= l.Bytes {
		return &QuotaError{Quota: QuotaBytes, Limit: l.Bytes, Used: used}
	}
	return nil
}

// CheckExport reports whether one more export would pass l: the exports
// quota, or a bytes quota already reached (an archive's size is known
// only once it is built).
func (u *Usage) CheckExport(l Limits) error {
	if l.Exports > 0 && int64(u.Exports)+1 > l.Exports {
		return &QuotaError{Quota: QuotaExports, Limit: l.Exports, Used: int64(u.Exports), Requested: 1}
	}
	return u.CheckImport(l)
}

// BytesUsed is what counts against the bytes quota: originals and export
// archives kept, and uploads in flight.
func (u *Usage) BytesUsed() int64 { return u.BytesStored + u.ExportBytes + u.BytesInFlight }

// Limits are u's own limits where set, else defaults.
func (u *Usage) Limits(defaults Limits) Limits {
	l := defaults
	if u.QuotaBytes != nil {
		l.Bytes = *u.QuotaBytes
	}
	if u.QuotaFilesInFlight != nil {
		l.FilesInFlight = int64(*u.QuotaFilesInFlight)
	}
	if u.QuotaExports != nil {
		l.Exports = int64(*u.QuotaExports)
	}
	return l
}

// Quotas are the limits set on one user; nil leaves the configured
// default, 0 means none.
type Quotas struct {
	Bytes         *int64
	FilesInFlight *int
	Exports       *int
}

// SetQuotas sets user's own limits.
func (s *Store) SetQuotas(ctx context.Context, user uuid.UUID, q Quotas) error {
	res, err := s.db.ExecContext(ctx, `UPDATE users SET quota_bytes = $2, quota_files_in_flight = $3, quota_exports = $4 WHERE id = $1`,
		user, q.Bytes, q.FilesInFlight, q.Exports)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}
