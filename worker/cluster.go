package worker

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/assist"
	"lightbox/cluster"
	"lightbox/events"
	"lightbox/store"
	"lightbox/tasks"
)

func init() { handle(tasks.TypeCluster, (*Worker).clusterProject) }

// clusterProject rebuilds a project's moments, bursts and duplicate groups
// and moves its search-ready assets to 'ai'. Runs are debounced in
// Postgres: see store.ScheduleCluster.
func (w *Worker) clusterProject(ctx context.Context, t *asynq.Task) error {
	p, err := tasks.Decode[tasks.ClusterPayload](t)
	if err != nil {
		return err
	}
	ok, err := w.st.StartClusterRun(ctx, p.ProjectID, p.Run)
	if err != nil || !ok {
		return err
	}
	inputs, err := w.st.ClusterInputs(ctx, p.ProjectID)
	if err != nil {
		return err
	}
	photos := make([]cluster.Photo, len(inputs))
	var ready []uuid.UUID
	for i, in := range inputs {
		photos[i] = clusterPhoto(in)
		if in.Status == store.AssetSearch {
			ready = append(ready, in.ID)
		}
	}
	groups := cluster.Build(photos, cluster.DefaultOptions)
	rows := make([]store.NewCluster, len(groups))
	for i, g := range groups {
		rows[i] = store.NewCluster{Kind: g.Kind, Title: g.Title, Start: g.Start, End: g.End, Score: g.Score,
			Winner: g.Winner, WhyWinner: g.WhyWinner}
		for _, m := range g.Members {
			signals, _ := json.Marshal(m.Signals)
			rows[i].Members = append(rows[i].Members, store.ClusterMember{AssetID: m.ID, Rank: m.Rank, Role: m.Role, Signals: signals})
		}
	}
	moved, stored, err := w.st.ReplaceClusters(ctx, p.ProjectID, p.Run, rows, ready)
	if err != nil {
		return err
	}
	if !stored {
		// A newer run stored its groups first; these are older.
		w.log.Info("cluster run superseded; nothing stored", "project", p.ProjectID, "run", p.Run)
		return nil
	}
	w.tracker.Tell(ctx, events.ClusterUpdated, p.ProjectID, uuid.Nil, map[string]any{"run": p.Run, "groups": len(groups), "aiReady": moved})
	w.log.Info("project clustered", "project", p.ProjectID, "run", p.Run, "photos", len(photos), "groups", len(groups), "aiReady", moved)
	return nil
}

func clusterPhoto(in store.ClusterInput) cluster.Photo {
	var q struct {
		Sharpness         float64 `json:"sharpness"`
		HighlightsClipped float64 `json:"highlightsClipped"`
		ShadowsClipped    float64 `json:"shadowsClipped"`
		MeanLuminance     float64 `json:"meanLuminance"`
	}
	json.Unmarshal(in.Quality, &q)
	judged := assist.FromQuality(in.ID, in.Quality)
	str := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	num := func(n *int) int {
		if n == nil {
			return 0
		}
		return *n
	}
	p := cluster.Photo{ID: in.ID, Filename: in.Filename, CapturedAt: in.CapturedAt,
		Camera: str(in.CameraMake) + " " + str(in.CameraModel), PHash: uint64(in.Hash),
		Width: num(in.Width), Height: num(in.Height), Bytes: in.Bytes, Sharpness: q.Sharpness,
		Highlights: q.HighlightsClipped, Shadows: q.ShadowsClipped, Luminance: q.MeanLuminance,
		Judged: judged.Judged, Focus: judged.Focus, Motion: judged.Motion, EV: judged.EV}
	if in.FaceCount != nil {
		p.Faces = &cluster.Faces{Count: *in.FaceCount, EyesClosed: num(in.EyesClosed)}
		if in.MinSharpness != nil {
			p.Faces.MinSharpness = *in.MinSharpness
		}
	}
	return p
}

// scheduleCluster asks for a debounced cluster run of project and enqueues
// it when this call scheduled it. A lost enqueue is repeated by the sweeper.
func (w *Worker) scheduleCluster(ctx context.Context, project uuid.UUID) error {
	run, err := w.st.ScheduleCluster(ctx, project, w.cfg.ClusterDelay)
	if err != nil || !run.New {
		return err
	}
	return w.jobs.EnqueueClusterRun(ctx, *run)
}
