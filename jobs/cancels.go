package jobs

import (
	"context"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// A project's cancel mark, kept in Redis, lets a worker skip the Postgres
// read of a job's status before it runs the job's task: a job can only be
// canceled in a project that carries the mark, so only those projects'
// tasks pay for the read. Whoever cancels jobs marks their project first,
// and cancels only once the mark is set, so no cancel committed in
// Postgres goes unseen.
//
// A mark is never removed: it costs a few bytes per project that ever had
// a job canceled, and those projects' tasks simply read as before. A Redis
// restored from a snapshot older than a mark can run a canceled job's task
// once more, which every task already tolerates (at least once).
func cancelMarkKey(project uuid.UUID) string {
	return "lightbox:jobs:cancel-mark:" + project.String()
}

// MarkCanceling marks project as one whose jobs may be canceled. Call it
// before the cancel, and do not cancel when it fails.
func MarkCanceling(ctx context.Context, rdb redis.Cmdable, project uuid.UUID) error {
	return rdb.Set(ctx, cancelMarkKey(project), 1, 0).Err()
}

// MayBeCanceled reports whether project carries the mark: when it does
// not, none of its jobs has been canceled.
func MayBeCanceled(ctx context.Context, rdb redis.Cmdable, project uuid.UUID) (bool, error) {
	n, err := rdb.Exists(ctx, cancelMarkKey(project)).Result()
	return n > 0, err
}
