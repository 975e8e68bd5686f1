package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/store"
	"lightbox/tasks"
)

// Rerun puts jobs back to queued and runs their tasks again from the
// jobs' recorded payloads under the same TaskIDs, a batch's as far as the
// caps admit (see Enqueue); the ended tasks, archived or kept as
// completed, are deleted first. An enqueue that fails is left to the
// sweep, which finds the job queued and never enqueued. It returns the
// ids of the jobs put back, and the jobs that cannot be: their failed
// asset's bytes were uploaded again as another asset, which stays the
// project's original (the asset's error then says so).
func (d *Dispatcher) Rerun(ctx context.Context, log *slog.Logger, jobs []store.Job) (retried []uuid.UUID, dups []Duplicate, err error) {
	retried = []uuid.UUID{}
	var requeued []store.Job
	for _, j := range jobs {
		err := d.Store.RequeueJob(ctx, j.ID, tasks.FailsAsset(j.Type))
		var dup *store.DuplicateError
		if errors.As(err, &dup) {
			dups = append(dups, Duplicate{JobID: j.ID, AssetID: *j.AssetID, DuplicateOf: dup.Of})
			err = d.Store.FailAsset(ctx, *j.AssetID, "duplicate",
				fmt.Sprintf("The same photo was uploaded again as asset %s, which is kept; this one cannot run again.", dup.Of))
		}
		if err != nil {
			// Those already put back are committed: they go now all the same.
			d.handOver(ctx, requeued)
			return retried, dups, err
		}
		if dup != nil {
			continue
		}
		// An ended task holds the TaskID: it makes way for a new run with
		// a full set of retries. A live one (a retry clicked twice) stays.
		if info, err := d.Inspector.GetTaskInfo(j.Queue, j.TaskID); err == nil && ended(info.State) {
			if err := d.Inspector.DeleteTask(j.Queue, j.TaskID); err != nil && !errors.Is(err, asynq.ErrTaskNotFound) {
				log.Warn("retry: remove the ended task", "job", j.ID, "err", err)
			}
		}
		requeued = append(requeued, j)
		retried = append(retried, j.ID)
	}
	// Through the caps like new work: retrying a whole failed upload must
	// not put it ahead of the user's other batches, nor of other users'.
	d.handOver(ctx, requeued)
	return retried, dups, nil
}

// Duplicate is a failed job Rerun does not run again: its asset's bytes
// are live as another asset of the project.
type Duplicate struct {
	JobID       uuid.UUID `json:"jobId"`
	AssetID     uuid.UUID `json:"assetId"`
	DuplicateOf uuid.UUID `json:"duplicateOf"`
}
