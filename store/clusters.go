package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
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

// OverdueClusterRuns are at most limit enqueued runs, oldest first, that
// should have started before cutoff but have not, or that started before
// startedBefore and never finished: their task may be lost, or archived
// after failing its retries, and while a run waits every later request
// joins it (and the project's photos wait for it to reach 'ai').
func (s *Store) OverdueClusterRuns(ctx context.Context, cutoff, startedBefore time.Time, limit int) ([]ClusterRun, error) {
	var runs []ClusterRun
	err := s.db.SelectContext(ctx, &runs, `
		SELECT project_id, run, coalesce(scheduled_for, started_at) AS scheduled_for, false AS new FROM cluster_runs
		WHERE (scheduled_for < $1 AND enqueued_at IS NOT NULL)
		   OR (scheduled_for IS NULL AND done_run < run AND started_at < $2)
		ORDER BY 3, project_id LIMIT $3`, cutoff, startedBefore, limit)
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
	// The summary of its faces; nil FaceCount when they were not looked for.
	FaceCount    *int     `db:"face_count"`
	EyesClosed   *int     `db:"eyes_closed"`
	MinSharpness *float64 `db:"min_sharpness"`
}

// ClusterInputs lists a project's processed assets with their hashes and
// the summary of their faces.
func (s *Store) ClusterInputs(ctx context.Context, project uuid.UUID) ([]ClusterInput, error) {
	var in []ClusterInput
	err := s.db.SelectContext(ctx, &in, `
		SELECT a.id, a.filename, a.status, a.captured_at, a.camera_make, a.camera_model, a.width_px, a.height_px, a.quality, h.hash,
		       coalesce(a.upload_size, a.byte_size) AS byte_size, fs.face_count, fs.eyes_closed, fs.min_sharpness
		FROM assets a JOIN perceptual_hashes h ON h.asset_id = a.id`+faceJoin+`a.id
		WHERE a.project_id = $1 AND a.status IN ('cull', 'search', 'ai')
		ORDER BY a.created_at, a.id`, project)
	return in, err
}

// NewCluster is a group to store.
type NewCluster struct {
	// ID is zero for a new group; ReplaceClusters gives a group that
	// carries a person's review the reviewed group's ID.
	ID        uuid.UUID
	Kind      string
	Title     string
	Start     *time.Time
	End       *time.Time
	Score     float64
	Winner    uuid.UUID
	WhyWinner []string
	Members   []ClusterMember
	review
}

// review is what a person decided about a group.
type review struct {
	Reviewed     bool
	ManualTitle  bool
	ManualWinner bool
	Overrides    json.RawMessage
}

// ClusterMember is one asset's place in a cluster.
type ClusterMember struct {
	AssetID uuid.UUID       `db:"asset_id" json:"assetId"`
	Rank    int             `db:"rank" json:"rank"`
	Role    string          `db:"role" json:"role"`
	Signals json.RawMessage `db:"signals" json:"signals"`
}

// ReplaceClusters swaps a project's clusters for cs, the groups of cluster
// run, in one transaction and moves the search-ready assets among ready to
// 'ai'. It returns how many assets moved, and false, changing nothing, when
// run is not newer than the last run stored: runs of a project may overlap,
// and an older one may finish last. Reviews of the old groups carry over
// (see carryReviews).
func (s *Store) ReplaceClusters(ctx context.Context, project uuid.UUID, run int64, cs []NewCluster, ready []uuid.UUID) (int, bool, error) {
	var moved int
	var stored bool
	err := s.WithTx(ctx, func(tx *Store) error {
		// Recording the run first locks the project's row, so runs that
		// finish together store one after the other, each seeing the
		// other's groups. A project without a row yet gets one.
		res, err := tx.db.ExecContext(ctx, `
			INSERT INTO cluster_runs AS c (project_id, run, done_run, finished_at) VALUES ($1, $2, $2, now())
			ON CONFLICT (project_id) DO UPDATE SET done_run = $2, finished_at = now() WHERE c.done_run < $2`, project, run)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		var reviewed []reviewedCluster
		if err := tx.db.SelectContext(ctx, &reviewed, `
			SELECT c.id, c.kind, c.title, c.reviewed, c.manual_title, c.manual_winner, c.manual_overrides, c.winner_asset_id,
			       array_agg(ca.asset_id) AS members
			FROM clusters c JOIN cluster_assets ca ON ca.cluster_id = c.id
			WHERE c.project_id = $1 AND (c.reviewed OR c.manual_title OR c.manual_winner OR c.manual_overrides IS NOT NULL)
			GROUP BY c.id`, project); err != nil {
			return err
		}
		carryReviews(reviewed, cs)
		if _, err := tx.db.ExecContext(ctx, `DELETE FROM clusters WHERE project_id = $1`, project); err != nil {
			return err
		}
		if err := tx.insertClusters(ctx, project, cs); err != nil {
			return err
		}
		ids := make([]string, len(ready))
		for i, id := range ready {
			ids[i] = id.String()
		}
		res, err = tx.db.ExecContext(ctx, `UPDATE assets SET status = 'ai', updated_at = now() WHERE id = ANY($1) AND status = 'search'`, pq.Array(ids))
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		moved, stored = int(n), true
		return nil
	})
	if err != nil {
		return 0, false, err
	}
	return moved, stored, nil
}

// stableClusterID names a group by its project, kind and lowest member, so
// a group stored again by the next run keeps its id while it keeps that
// photo: links to it, and the list's cursors, outlive the run. A photo is
// in one group of each kind, so the name is unique within a run.
func stableClusterID(project uuid.UUID, c NewCluster) uuid.UUID {
	var lowest uuid.UUID
	for i, m := range c.Members {
		if i == 0 || bytes.Compare(m.AssetID[:], lowest[:]) < 0 {
			lowest = m.AssetID
		}
	}
	return uuid.NewSHA1(project, []byte(c.Kind+"/"+lowest.String()))
}

// insertClusters writes cs and their members in two statements, however
// many there are: a project of 100,000 photos has tens of thousands of
// groups, and a statement each would take most of a cluster run.
func (s *Store) insertClusters(ctx context.Context, project uuid.UUID, cs []NewCluster) error {
	n := len(cs)
	ids, kinds, titles, winners, whys := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	starts, ends, overrides := make([]*time.Time, n), make([]*time.Time, n), make([]*string, n)
	scores := make([]float64, n)
	reviewed, manualTitle, manualWinner := make([]bool, n), make([]bool, n), make([]bool, n)
	var members struct {
		clusters, assets, roles, signals []string
		ranks                            []int64
	}
	used := make(map[uuid.UUID]bool, n)
	for _, c := range cs {
		used[c.ID] = c.ID != uuid.Nil
	}
	for i, c := range cs {
		id := c.ID
		if id == uuid.Nil {
			id = stableClusterID(project, c)
			if used[id] {
				id = uuid.New()
			}
			used[id] = true
		}
		why, _ := json.Marshal(append([]string{}, c.WhyWinner...))
		ids[i], kinds[i], titles[i], winners[i], whys[i] = id.String(), c.Kind, c.Title, c.Winner.String(), string(why)
		starts[i], ends[i], scores[i] = c.Start, c.End, c.Score
		reviewed[i], manualTitle[i], manualWinner[i] = c.Reviewed, c.ManualTitle, c.ManualWinner
		if len(c.Overrides) > 0 {
			o := string(c.Overrides)
			overrides[i] = &o
		}
		for _, m := range c.Members {
			members.clusters = append(members.clusters, ids[i])
			members.assets = append(members.assets, m.AssetID.String())
			members.ranks = append(members.ranks, int64(m.Rank))
			members.roles = append(members.roles, m.Role)
			members.signals = append(members.signals, string(m.Signals))
		}
	}
	if _, err := s.db.ExecContext(ctx, `
		INSERT INTO clusters (id, project_id, kind, title, start_time, end_time, score, winner_asset_id, why_winner,
		                      reviewed, manual_title, manual_winner, manual_overrides)
		SELECT u.id, $1, u.kind, u.title, u.start_time, u.end_time, u.score, u.winner,
		       ARRAY(SELECT jsonb_array_elements_text(u.why)), u.reviewed, u.manual_title, u.manual_winner, u.overrides
		FROM unnest($2::uuid[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[], $7::float8[], $8::uuid[],
		            $9::jsonb[], $10::boolean[], $11::boolean[], $12::boolean[], $13::jsonb[])
		    AS u(id, kind, title, start_time, end_time, score, winner, why, reviewed, manual_title, manual_winner, overrides)`,
		project, pq.Array(ids), pq.Array(kinds), pq.Array(titles), pq.Array(starts), pq.Array(ends), pq.Array(scores),
		pq.Array(winners), pq.Array(whys), pq.Array(reviewed), pq.Array(manualTitle), pq.Array(manualWinner),
		pq.Array(overrides)); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, `
		INSERT INTO cluster_assets (cluster_id, asset_id, rank, role, signals)
		SELECT u.cluster_id, u.asset_id, u.rank, u.role, u.signals
		FROM unnest($1::uuid[], $2::uuid[], $3::int[], $4::text[], $5::jsonb[]) AS u(cluster_id, asset_id, rank, role, signals)`,
		pq.Array(members.clusters), pq.Array(members.assets), pq.Array(members.ranks), pq.Array(members.roles),
		pq.Array(members.signals))
	return err
}

// Cluster is a stored group with its members.
type Cluster struct {
	ID            uuid.UUID        `db:"id"`
	ProjectID     uuid.UUID        `db:"project_id"`
	Kind          string           `db:"kind"`
	Title         string           `db:"title"`
	StartTime     *time.Time       `db:"start_time"`
	EndTime       *time.Time       `db:"end_time"`
	Score         float64          `db:"score"`
	Reviewed      bool             `db:"reviewed"`
	WinnerAssetID *uuid.UUID       `db:"winner_asset_id"`
	WhyWinner     Strings          `db:"why_winner"`
	Overrides     *json.RawMessage `db:"manual_overrides"` // the app's own, as it sent them
	CreatedAt     time.Time        `db:"created_at"`
	Members       json.RawMessage  `db:"members"`
}

const clusterSelect = `
	SELECT c.id, c.project_id, c.kind, c.title, c.start_time, c.end_time, c.score, c.reviewed, c.winner_asset_id,
	       c.why_winner, c.manual_overrides, c.created_at,
	       (SELECT coalesce(json_agg(json_build_object('assetId', ca.asset_id, 'rank', ca.rank, 'role', ca.role, 'signals', coalesce(nullif(ca.signals, 'null'::jsonb), '{}'::jsonb))
	                ORDER BY ca.rank), '[]') FROM cluster_assets ca WHERE ca.cluster_id = c.id) AS members
	FROM clusters c`

// Clusters lists a project's clusters of kind ("" for all) in time order,
// those without a time (duplicate groups) first. The cursor is a group's
// start time, not when it was stored: every cluster run stores all of a
// project's groups again, and a cursor from before a run still goes on
// from the same point in time.
func (s *Store) Clusters(ctx context.Context, project uuid.UUID, kind string, after *Cursor, limit int) (Page[Cluster], error) {
	var rows []Cluster
	afterTime, afterID := time.Time{}, uuid.Nil
	if after != nil {
		afterTime, afterID = after.Time, after.ID
	}
	err := s.db.SelectContext(ctx, &rows, clusterSelect+`
		WHERE c.project_id = $1 AND ($2 = '' OR c.kind = $2)
		  AND (coalesce(c.start_time, '0001-01-01Z'), c.id) > ($3, $4)
		ORDER BY coalesce(c.start_time, '0001-01-01Z'), c.id LIMIT $5`, project, kind, afterTime, afterID, limit+1)
	if err != nil {
		return Page[Cluster]{}, err
	}
	return pageOf(rows, limit, func(c Cluster) Cursor {
		if c.StartTime == nil {
			return Cursor{ID: c.ID}
		}
		return Cursor{Time: *c.StartTime, ID: c.ID}
	}), nil
}

// Cluster returns owner's cluster id.
func (s *Store) Cluster(ctx context.Context, owner, id uuid.UUID) (*Cluster, error) {
	c := &Cluster{}
	err := s.db.GetContext(ctx, c, clusterSelect+` JOIN projects p ON p.id = c.project_id
		WHERE c.id = $1 AND p.owner_user_id = $2`, id, owner)
	return c, notFound(err)
}

// reviewedCluster is a stored group a person has reviewed, with its members.
type reviewedCluster struct {
	ID            uuid.UUID        `db:"id"`
	Kind          string           `db:"kind"`
	Title         string           `db:"title"`
	Reviewed      bool             `db:"reviewed"`
	ManualTitle   bool             `db:"manual_title"`
	ManualWinner  bool             `db:"manual_winner"`
	Overrides     *json.RawMessage `db:"manual_overrides"`
	WinnerAssetID *uuid.UUID       `db:"winner_asset_id"`
	Members       UUIDs            `db:"members"`
}

// carryReviews gives each reviewed group's review to the new group of its
// kind that holds most of its members, when that is more than half of
// them: the group the person looked at, grown or shrunk by later uploads.
// The new group takes the old one's ID, so clients keep their place; the
// chosen winner stays the winner while it is still a member. A new group
// takes at most one review.
func carryReviews(reviewed []reviewedCluster, cs []NewCluster) {
	taken := make([]bool, len(cs))
	for _, old := range reviewed {
		in := make(map[uuid.UUID]bool, len(old.Members))
		for _, id := range old.Members {
			in[id] = true
		}
		best, bestShared := -1, 0
		for i, c := range cs {
			if taken[i] || c.Kind != old.Kind {
				continue
			}
			shared := 0
			for _, m := range c.Members {
				if in[m.AssetID] {
					shared++
				}
			}
			if shared > bestShared {
				best, bestShared = i, shared
			}
		}
		if best < 0 || 2*bestShared <= len(old.Members) {
			continue
		}
		taken[best] = true
		c := &cs[best]
		c.ID = old.ID
		c.review = review{Reviewed: old.Reviewed, ManualTitle: old.ManualTitle}
		if old.Overrides != nil {
			c.Overrides = *old.Overrides
		}
		if old.ManualTitle {
			c.Title = old.Title
		}
		if old.ManualWinner && old.WinnerAssetID != nil && c.chooseWinner(*old.WinnerAssetID) {
			c.ManualWinner = true
		}
	}
}

// chooseWinner makes member id the group's winner, as a person chose it:
// the machine's winner becomes an alternative. It reports false when id is
// not a member.
func (c *NewCluster) chooseWinner(id uuid.UUID) bool {
	i := slices.IndexFunc(c.Members, func(m ClusterMember) bool { return m.AssetID == id })
	if i < 0 {
		return false
	}
	for j := range c.Members {
		if c.Members[j].Role == "winner" {
			c.Members[j].Role = "alt"
		}
	}
	c.Members[i].Role = "winner"
	c.Winner, c.WhyWinner = id, []string{"chosen"}
	return true
}

// ClusterChange is what a person changes about a group; nil leaves a field
// as it is.
type ClusterChange struct {
	Title     *string
	Reviewed  *bool
	Overrides *json.RawMessage // a JSON null clears them
}

// UpdateCluster applies change to owner's cluster id and returns it.
func (s *Store) UpdateCluster(ctx context.Context, owner, id uuid.UUID, change ClusterChange) (*Cluster, error) {
	var overrides json.RawMessage
	if change.Overrides != nil {
		overrides = *change.Overrides
	}
	err := s.WithTx(ctx, func(tx *Store) error {
		if _, err := tx.Cluster(ctx, owner, id); err != nil {
			return err
		}
		_, err := tx.db.ExecContext(ctx, `
			UPDATE clusters SET
				title = coalesce($2, title),
				manual_title = manual_title OR $2 IS NOT NULL,
				reviewed = coalesce($3, reviewed),
				manual_overrides = CASE WHEN $4 THEN nullif($5::jsonb, 'null'::jsonb) ELSE manual_overrides END
			WHERE id = $1`,
			id, change.Title, change.Reviewed, change.Overrides != nil, nullJSON(overrides))
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.Cluster(ctx, owner, id)
}

// nullJSON is raw as a query argument: SQL NULL when empty.
func nullJSON(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return string(raw)
}

// ErrNotMember is returned for a winner that is not in the group.
var ErrNotMember = errors.New("store: the asset is not a member of the cluster")

// ChooseClusterWinner makes member winner the winner of owner's cluster id,
// as a person chose it, and returns the cluster.
func (s *Store) ChooseClusterWinner(ctx context.Context, owner, id, winner uuid.UUID) (*Cluster, error) {
	err := s.WithTx(ctx, func(tx *Store) error {
		if _, err := tx.Cluster(ctx, owner, id); err != nil {
			return err
		}
		res, err := tx.db.ExecContext(ctx, `
			UPDATE cluster_assets SET role = CASE WHEN asset_id = $2 THEN 'winner' WHEN role = 'winner' THEN 'alt' ELSE role END
			WHERE cluster_id = $1 AND EXISTS (SELECT 1 FROM cluster_assets WHERE cluster_id = $1 AND asset_id = $2)`, id, winner)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotMember
		}
		_, err = tx.db.ExecContext(ctx, `UPDATE clusters SET winner_asset_id = $2, why_winner = '{chosen}', manual_winner = true
			WHERE id = $1`, id, winner)
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.Cluster(ctx, owner, id)
}
