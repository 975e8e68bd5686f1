package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/lib/pq"

	"lightbox/ptr"
)

// FinalizeItem is a client's claim that an upload is complete.
type FinalizeItem struct {
	AssetID  uuid.UUID
	Checksum string // lowercase hex SHA-256
}

// FinalizeOutcome is what finalize says of one asset.
type FinalizeOutcome struct {
	AssetID      uuid.UUID
	Status       string // uploaded, duplicate, failed or pending_upload
	DuplicateOf  *uuid.UUID
	ErrorCode    string
	ErrorMessage string
	JobID        *uuid.UUID
	BatchID      *uuid.UUID
}

// FinalizeResult is the whole answer.
type FinalizeResult struct {
	Assets []FinalizeOutcome
	// Accepted are the assets this call accepted, in the order given: the
	// caller records their ingest jobs in the same transaction, and sets
	// their outcomes' JobID and BatchID.
	Accepted []uuid.UUID
	// BatchID is the batch the accepted assets belong to: the new one when
	// this call accepted any, else the batch of an earlier identical call.
	BatchID *uuid.UUID
	// Jobs lists the ingest job of every accepted asset, new or earlier.
	Jobs []uuid.UUID
	// Discard are blob keys no longer needed (duplicates, bad checksums).
	Discard []string
}

// FinalizeUploads accepts uploaded assets of owner's project: each must
// have bytes whose server-computed SHA-256 equals the client's. A bad
// checksum fails the asset; the same bytes as a live asset of the project
// make it a duplicate; the rest become 'uploaded', each with a place in
// the attestation queue, and wait for the ingest jobs the caller records.
// Calling it again with the same items records nothing new and answers the
// same.
func (s *Store) FinalizeUploads(ctx context.Context, owner, project uuid.UUID, items []FinalizeItem) (*FinalizeResult, error) {
	var res *FinalizeResult
	// Two concurrent calls with the same new bytes collide on the unique
	// checksum index; the loser runs again and sees the winner's asset.
	err := s.retryCollisions(ctx, func(tx *Store) error {
		var err error
		res, err = tx.finalize(ctx, owner, project, items)
		return err
	})
	return res, err
}

type lockedAsset struct {
	ID          uuid.UUID  `db:"id"`
	Status      string     `db:"status"`
	Checksum    *string    `db:"checksum_sha256"`
	DuplicateOf *uuid.UUID `db:"duplicate_of"`
	ErrorCode   *string    `db:"error_code"`
	ErrorMsg    *string    `db:"error_message"`
	BlobKey     string     `db:"blob_key"`
	Filename    string     `db:"filename"`
	ContentType string     `db:"content_type"`
	UploadSize  *int64     `db:"upload_size"`
	URLExpires  *time.Time `db:"upload_expires_at"`
}

func (s *Store) finalize(ctx context.Context, owner, project uuid.UUID, items []FinalizeItem) (*FinalizeResult, error) {
	var ok bool
	if err := s.db.GetContext(ctx, &ok, `SELECT true FROM projects WHERE id = $1 AND owner_user_id = $2`, project, owner); err != nil {
		return nil, notFound(err)
	}
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.AssetID.String()
	}
	var rows []lockedAsset
	// Locked in id order so concurrent finalizes cannot deadlock.
	if err := s.db.SelectContext(ctx, &rows, `
		SELECT id, status, checksum_sha256, duplicate_of, error_code, error_message, blob_key, filename, content_type, upload_size,
		       upload_expires_at
		FROM assets WHERE project_id = $1 AND id = ANY($2) ORDER BY id FOR UPDATE`, project, pq.Array(ids)); err != nil {
		return nil, err
	}
	byID := map[uuid.UUID]*lockedAsset{}
	for i := range rows {
		byID[rows[i].ID] = &rows[i]
	}

	res := &FinalizeResult{Assets: make([]FinalizeOutcome, len(items))}
	var candidates []int // indexes into items whose bytes check out
	var earlier []string // assets finalized by an earlier call
	for i, it := range items {
		out := &res.Assets[i]
		out.AssetID = it.AssetID
		a := byID[it.AssetID]
		switch {
		case a == nil:
			out.Status, out.ErrorCode, out.ErrorMessage = "failed", "not_found", "No such asset in this project."
		case a.Status == AssetPendingUpload && a.Checksum == nil:
			out.Status, out.ErrorCode, out.ErrorMessage = AssetPendingUpload, "upload_missing", "No bytes have arrived for this asset; PUT them to its upload URL first."
		case a.Status == AssetPendingUpload && *a.Checksum != it.Checksum:
			out.Status, out.ErrorCode = AssetFailed, "checksum_mismatch"
			out.ErrorMessage = "The SHA-256 of the bytes received is " + *a.Checksum + ", not the one given."
			if _, err := s.db.ExecContext(ctx, `UPDATE assets SET status = 'failed', error_code = $2, error_message = $3,
				finalized_at = now(), updated_at = now() WHERE id = $1`, a.ID, out.ErrorCode, out.ErrorMessage); err != nil {
				return nil, err
			}
			res.Discard = append(res.Discard, a.BlobKey)
		case a.Status == AssetPendingUpload:
			candidates = append(candidates, i)
		case a.Status == AssetDuplicate:
			out.Status, out.DuplicateOf = AssetDuplicate, a.DuplicateOf
		case a.Status == AssetFailed:
			out.Status, out.ErrorCode, out.ErrorMessage = AssetFailed, ptr.Value(a.ErrorCode), ptr.Value(a.ErrorMsg)
		default: // uploaded, cull, search, ai: accepted by an earlier call
			out.Status = AssetUploaded
			earlier = append(earlier, a.ID.String())
		}
	}

	if err := s.acceptNew(ctx, project, items, candidates, byID, res); err != nil {
		return nil, err
	}
	if err := s.findEarlierJobs(ctx, earlier, res); err != nil {
		return nil, err
	}
	if err := s.recordDiscards(ctx, rows, res.Discard); err != nil {
		return nil, err
	}
	return res, nil
}

// acceptNew turns checked uploads into duplicates or new work.
func (s *Store) acceptNew(ctx context.Context, project uuid.UUID, items []FinalizeItem, candidates []int,
	byID map[uuid.UUID]*lockedAsset, res *FinalizeResult) error {
	if len(candidates) == 0 {
		return nil
	}
	sums := make([]string, len(candidates))
	for i, c := range candidates {
		sums[i] = items[c].Checksum
	}
	var live []struct {
		ID  uuid.UUID `db:"id"`
		Sum string    `db:"checksum_sha256"`
	}
	if err := s.db.SelectContext(ctx, &live, `
		SELECT DISTINCT ON (checksum_sha256) id, checksum_sha256 FROM assets
		WHERE project_id = $1 AND checksum_sha256 = ANY($2) AND status NOT IN ('pending_upload', 'failed', 'duplicate')
		ORDER BY checksum_sha256, created_at`, project, pq.Array(sums)); err != nil {
		return err
	}
	original := map[string]uuid.UUID{}
	for _, l := range live {
		original[l.Sum] = l.ID
	}

	var dupes, dupOf []string
	for _, c := range candidates {
		out, a := &res.Assets[c], byID[items[c].AssetID]
		if first, ok := original[items[c].Checksum]; ok {
			out.Status, out.DuplicateOf = AssetDuplicate, &first
			dupes, dupOf = append(dupes, a.ID.String()), append(dupOf, first.String())
			res.Discard = append(res.Discard, a.BlobKey)
			continue
		}
		// The first of several identical files in one call is the original.
		original[items[c].Checksum] = a.ID
		out.Status = AssetUploaded
		res.Accepted = append(res.Accepted, a.ID)
	}

	if len(dupes) > 0 {
		if _, err := s.db.ExecContext(ctx, `
			UPDATE assets a SET status = 'duplicate', duplicate_of = d.of, finalized_at = now(), updated_at = now()
			FROM unnest($1::uuid[], $2::uuid[]) AS d(id, of) WHERE a.id = d.id`, pq.Array(dupes), pq.Array(dupOf)); err != nil {
			return err
		}
	}
	if len(res.Accepted) == 0 {
		return nil
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE assets SET status = 'uploaded', finalized_at = now(), updated_at = now()
		WHERE id = ANY($1)`, pq.Array(res.Accepted)); err != nil {
		return err
	}
	// Every new original waits in line for the attestation chain.
	_, err := s.db.ExecContext(ctx, `
		INSERT INTO attestation_queue (asset_id, project_id, cid, op, visibility)
		SELECT a.id, a.project_id, a.checksum_sha256, 'ingest', 'private' FROM assets a
		WHERE a.id = ANY($1) ORDER BY a.created_at, a.id
		ON CONFLICT (asset_id, op) DO NOTHING`, pq.Array(res.Accepted))
	return err
}

// findEarlierJobs answers assets an earlier call accepted with that call's
// ingest job and batch, so a repeated finalize says the same thing.
func (s *Store) findEarlierJobs(ctx context.Context, earlier []string, res *FinalizeResult) error {
	if len(earlier) == 0 {
		return nil
	}
	var found []struct {
		AssetID uuid.UUID  `db:"asset_id"`
		JobID   uuid.UUID  `db:"id"`
		BatchID *uuid.UUID `db:"batch_id"`
	}
	if err := s.db.SelectContext(ctx, &found, `
		SELECT DISTINCT ON (asset_id) asset_id, id, batch_id FROM jobs
		WHERE asset_id = ANY($1) AND type = 'asset:ingest' ORDER BY asset_id, created_at`, pq.Array(earlier)); err != nil {
		return err
	}
	byAsset := map[uuid.UUID]int{}
	for i, f := range found {
		byAsset[f.AssetID] = i
	}
	for i := range res.Assets {
		out := &res.Assets[i]
		if out.Status != AssetUploaded || out.JobID != nil {
			continue
		}
		if k, ok := byAsset[out.AssetID]; ok {
			out.JobID, out.BatchID = &found[k].JobID, found[k].BatchID
			res.Jobs = append(res.Jobs, found[k].JobID)
			if res.BatchID == nil {
				res.BatchID = found[k].BatchID
			}
		}
	}
	return nil
}
