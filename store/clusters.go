package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/lib/pq"
)

// ClusterRun is a scheduled run of project:cluster.
type ClusterRun struct {
	ProjectID    uuid.UUID `db:"project_id"`
	Run          int64     `db:"run"`
	ScheduledFor time.Time `db:"scheduled_for"`
	// New is true when this call scheduled the run; only then must the
	// caller enqueue it.
	New bool `db:"new"`
}

// ScheduleCluster marks project as needing a cluster run after delay. A run
// already waiting absorbs the request.
func (s *Store) ScheduleCluster(ctx context.Context, project uuid.UUID, delay time.Duration) (*ClusterRun, error) {
	r := &ClusterRun{}
	err := s.db.GetContext(ctx, r, `
		INSERT INTO cluster_runs AS c (project_id, run, scheduled_for) VALUES ($1, 1, now() + $2::interval)
		ON CONFLICT (project_id) DO UPDATE SET
			run = CASE WHEN c.scheduled_for IS NULL THEN c.run + 1 ELSE c.run END,
			enqueued_at = CASE WHEN c.scheduled_for IS NULL THEN NULL ELSE c.enqueued_at END,
			scheduled_for = coalesce(c.scheduled_for, now() + $2::interval)
		RETURNING project_id, run, scheduled_for, (xmax = 0 OR enqueued_at IS NULL) AS new`,
		project, delay.String())
	return r, err
}

// MarkClusterEnqueued notes that run reached the queue.
func (s *Store) MarkClusterEnqueued(ctx context.Context, project uuid.UUID, run int64) error {
	_, err := s.db.ExecContext(ctx, `UPDATE cluster_runs SET enqueued_at = now() WHERE project_id = $1 AND run = $2`, project, run)
	return err
}

// UnenqueuedClusterRuns are scheduled runs whose enqueue was lost.
func (s *Store) UnenqueuedClusterRuns(ctx context.Context, cutoff time.Time) ([]ClusterRun, error) {
	var runs []ClusterRun
	err := s.db.SelectContext(ctx, &runs, `SELECT project_id, run, scheduled_for, false AS new FROM cluster_runs
		WHERE scheduled_for IS NOT NULL AND enqueued_at IS NULL AND scheduled_for < $1`, cutoff)
	return runs, err
}

// StartClusterRun claims run of project. It reports false when the run is
// stale (a later one is scheduled) or already finished, so that task should
// do nothing. A retry of a run that failed midway claims it again.
func (s *Store) StartClusterRun(ctx context.Context, project uuid.UUID, run int64) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE cluster_runs SET scheduled_for = NULL, started_at = now()
		WHERE project_id = $1 AND run = $2 AND done_run < $2`, project, run)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// ClusterInput is an asset as the grouping reads it.
type ClusterInput struct {
	ID          uuid.UUID       `db:"id"`
	Filename    string          `db:"filename"`
	Status      string          `db:"status"`
	CapturedAt  *time.Time      `db:"captured_at"`
	CameraMake  *string         `db:"camera_make"`
	CameraModel *string         `db:"camera_model"`
	Width       *int            `db:"width_px"`
	Height      *int            `db:"height_px"`
	Quality     json.RawMessage `db:"quality"`
	Hash        int64           `db:"hash"`
	Bytes       int64           `db:"byte_size"`
}

// ClusterInputs lists a project's processed assets with their hashes.
func (s *Store) ClusterInputs(ctx context.Context, project uuid.UUID) ([]ClusterInput, error) {
	var in []ClusterInput
	err := s.db.SelectContext(ctx, &in, `
		SELECT a.id, a.filename, a.status, a.captured_at, a.camera_make, a.camera_model, a.width_px, a.height_px, a.quality, h.hash,
		       coalesce(a.upload_size, a.byte_size) AS byte_size
		FROM assets a JOIN perceptual_hashes h ON h.asset_id = a.id
		WHERE a.project_id = $1 AND a.status IN ('cull', 'search', 'ai')
		ORDER BY a.created_at, a.id`, project)
	return in, err
}

// NewCluster is a group to store.
type NewCluster struct {
	Kind      string
	Title     string
	Start     *time.Time
	End       *time.Time
	Score     float64
	Winner    uuid.UUID
	WhyWinner []string
	Members   []ClusterMember
}

// ClusterMember is one asset's place in a cluster.
type ClusterMember struct {
	AssetID uuid.UUID       `db:"asset_id" json:"assetId"`
	Rank    int             `db:"rank" json:"rank"`
	Role    string          `db:"role" json:"role"`
	Signals json.RawMessage `db:"signals" json:"signals"`
}

// ReplaceClusters swaps a project's clusters for cs in one transaction and
// moves the search-ready assets among ready to 'ai'. It returns how many
// assets moved.
func (s *Store) ReplaceClusters(ctx context.Context, project uuid.UUID, run int64, cs []NewCluster, ready []uuid.UUID) (int, error) {
	var moved int
	err := s.WithTx(ctx, func(tx *Store) error {
		if _, err := tx.db.ExecContext(ctx, `DELETE FROM clusters WHERE project_id = $1`, project); err != nil {
			return err
		}
		for _, c := range cs {
			id := uuid.New()
			if _, err := tx.db.ExecContext(ctx, `
				INSERT INTO clusters (id, project_id, kind, title, start_time, end_time, score, winner_asset_id, why_winner)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
				id, project, c.Kind, c.Title, c.Start, c.End, c.Score, c.Winner, pq.Array(c.WhyWinner)); err != nil {
				return err
			}
			ids, ranks, roles, signals := make([]string, len(c.Members)), make([]int64, len(c.Members)), make([]string, len(c.Members)), make([]string, len(c.Members))
			for i, m := range c.Members {
				ids[i], ranks[i], roles[i], signals[i] = m.AssetID.String(), int64(m.Rank), m.Role, string(m.Signals)
			}
			if _, err := tx.db.ExecContext(ctx, `
				INSERT INTO cluster_assets (cluster_id, asset_id, rank, role, signals)
				SELECT $1, u.id, u.rank, u.role, u.signals FROM unnest($2::uuid[], $3::int[], $4::text[], $5::jsonb[]) AS u(id, rank, role, signals)`,
				id, pq.Array(ids), pq.Array(ranks), pq.Array(roles), pq.Array(signals)); err != nil {
				return err
			}
		}
		ids := make([]string, len(ready))
		for i, id := range ready {
			ids[i] = id.String()
		}
		res, err := tx.db.ExecContext(ctx, `UPDATE assets SET status = 'ai', updated_at = now() WHERE id = ANY($1) AND status = 'search'`, pq.Array(ids))
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		moved = int(n)
		_, err = tx.db.ExecContext(ctx, `UPDATE cluster_runs SET finished_at = now(), done_run = $2 WHERE project_id = $1 AND done_run < $2`, project, run)
		return err
	})
	return moved, err
}

// Cluster is a stored group with its members.
type Cluster struct {
	ID            uuid.UUID       `db:"id"`
	ProjectID     uuid.UUID       `db:"project_id"`
	Kind          string          `db:"kind"`
	Title         string          `db:"title"`
	StartTime     *time.Time      `db:"start_time"`
	EndTime       *time.Time      `db:"end_time"`
	Score         float64         `db:"score"`
	Reviewed      bool            `db:"reviewed"`
	WinnerAssetID *uuid.UUID      `db:"winner_asset_id"`
	WhyWinner     Strings         `db:"why_winner"`
	CreatedAt     time.Time       `db:"created_at"`
	Members       json.RawMessage `db:"members"`
}

const clusterSelect = `
	SELECT c.id, c.project_id, c.kind, c.title, c.start_time, c.end_time, c.score, c.reviewed, c.winner_asset_id,
	       c.why_winner, c.created_at,
	       (SELECT coalesce(json_agg(json_build_object('assetId', ca.asset_id, 'rank', ca.rank, 'role', ca.role, 'signals', ca.signals)
	                ORDER BY ca.rank), '[]') FROM cluster_assets ca WHERE ca.cluster_id = c.id) AS members
	FROM clusters c`

// Clusters lists a project's clusters of kind ("" for all), in time order.
func (s *Store) Clusters(ctx context.Context, project uuid.UUID, kind string, after *Cursor, limit int) (Page[Cluster], error) {
	var rows []Cluster
	afterTime, afterID := time.Time{}, uuid.Nil
	if after != nil {
		afterTime, afterID = after.Time, after.ID
	}
	err := s.db.SelectContext(ctx, &rows, clusterSelect+`
		WHERE c.project_id = $1 AND ($2 = '' OR c.kind = $2) AND (c.created_at, c.id) > ($3, $4)
		ORDER BY c.created_at, c.id LIMIT $5`, project, kind, afterTime, afterID, limit+1)
	if err != nil {
		return Page[Cluster]{}, err
	}
	return pageOf(rows, limit, func(c Cluster) Cursor { return Cursor{c.CreatedAt, c.ID} }), nil
}

// Cluster returns owner's cluster id.
func (s *Store) Cluster(ctx context.Context, owner, id uuid.UUID) (*Cluster, error) {
	c := &Cluster{}
	err := s.db.GetContext(ctx, c, clusterSelect+` JOIN projects p ON p.id = c.project_id
		WHERE c.id = $1 AND p.owner_user_id = $2`, id, owner)
	return c, notFound(err)
}
