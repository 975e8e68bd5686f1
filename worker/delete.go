package worker

import (
	"context"

	"github.com/hibiken/asynq"

	"lightbox/tasks"
)

func init() { handle(tasks.TypeDelete, (*Worker).deleteAsset) }

// deleteAsset removes a deleted asset's original and derived files; its row
// went when the user deleted it. Deleting what is already gone is fine, so
// the task can run again. The project's groups are made again without it.
func (w *Worker) deleteAsset(ctx context.Context, t *asynq.Task) error {
	p, err := tasks.Decode[tasks.DeletePayload](t)
	if err != nil {
		return err
	}
	for _, key := range p.Keys {
		if err := w.blobs.Delete(ctx, key); err != nil {
			return err
		}
	}
	return w.scheduleCluster(ctx, p.ProjectID)
}
