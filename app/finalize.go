package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"lightbox/blob"
	"lightbox/jobs"
	"lightbox/store"
	"lightbox/tasks"
)

// Finalize accepts owner's uploaded originals in project and records an
// ingest job for each (AcceptUploads), in one transaction. Once that is
// committed the jobs are handed to the queue (Insert); Finalize then
// deletes the bytes of the copies it discarded and starts the chain
// flusher for the new originals. None of these fails the call, since the
// sweeper repeats what is lost.
func (a *App) Finalize(ctx context.Context, log *slog.Logger, owner, project uuid.UUID,
	items []store.FinalizeItem, batch *uuid.UUID) (*store.FinalizeResult, error) {
	if err := a.recordDirectUploads(ctx, project, items); err != nil {
		return nil, err
	}
	var res *store.FinalizeResult
	err := a.store.WithTx(ctx, func(tx *store.Store) error {
		var err error
		res, err = AcceptUploads(ctx, tx, owner, project, items, batch)
		return err
	})
	if err != nil {
		return nil, err
	}
	// The work is recorded: what follows goes on even if the caller has gone.
	ctx, cancel := jobs.AfterCommit(ctx)
	defer cancel()
	for _, key := range res.Discard {
		if err := a.Blobs.Delete(ctx, key); err != nil {
			log.Warn("discard blob", "key", key, "err", err)
		}
	}
	if len(res.Accepted) > 0 {
		if err := a.Jobs.FlushChain(ctx); err != nil {
			log.Warn("enqueue chain flush", "err", err)
		}
	}
	if a.ThumbnailsFirst {
		a.enqueueThumbnails(ctx, log, project, res.Accepted)
	}
	return res, nil
}

// enqueueThumbnails queues the thumbnails of newly accepted photos ahead of
// their ingests. They have no job rows and nothing repeats a lost one: the
// ingest makes any thumbnail that was not made first.
func (a *App) enqueueThumbnails(ctx context.Context, log *slog.Logger, project uuid.UUID, assets []uuid.UUID) {
	ts := make([]*asynq.Task, len(assets))
	for i, a := range assets {
		ts[i] = tasks.NewTask(tasks.ThumbnailPayload{ProjectID: project, AssetID: a})
	}
	for i, err := range tasks.EnqueueAll(ctx, a.Jobs.Queue, ts) {
		if err != nil && !tasks.IDInUse(err) {
			log.Warn("enqueue thumbnail; its ingest will make it", "asset", assets[i], "err", err)
		}
	}
}

// AcceptUploads is Finalize's work in tx: it accepts owner's uploaded
// originals in project (store.FinalizeUploads) and records an ingest job
// for each, in batch, or in a new upload batch when batch is nil.
func AcceptUploads(ctx context.Context, tx *store.Store, owner, project uuid.UUID,
	items []store.FinalizeItem, batch *uuid.UUID) (*store.FinalizeResult, error) {
	res, err := tx.FinalizeUploads(ctx, owner, project, items)
	if err != nil {
		return nil, err
	}
	ingests := make([]tasks.JobArgs, len(res.Accepted))
	for i, asset := range res.Accepted {
		ingests[i] = tasks.IngestPayload{Job: tasks.NewJob(project), AssetID: asset}
	}
	into := jobs.NewBatch(owner, store.BatchUpload)
	if batch != nil {
		into = jobs.InBatch(*batch)
	}
	recorded, err := jobs.InsertMany(ctx, tx, ingests, into)
	if err != nil {
		return nil, err
	}
	answerWithJobs(res, recorded)
	return res, nil
}

// answerWithJobs names in res the ingest job, and its batch, of each asset
// it accepted; jobs are in res.Accepted's order.
func answerWithJobs(res *store.FinalizeResult, jobs []store.Job) {
	if len(jobs) == 0 {
		return
	}
	byAsset := make(map[uuid.UUID]*store.Job, len(jobs))
	ids := make([]uuid.UUID, len(jobs))
	for i := range jobs {
		byAsset[*jobs[i].AssetID] = &jobs[i]
		ids[i] = jobs[i].ID
	}
	for i := range res.Assets {
		if j := byAsset[res.Assets[i].AssetID]; j != nil && res.Assets[i].JobID == nil {
			res.Assets[i].JobID, res.Assets[i].BatchID = &j.ID, j.BatchID
		}
	}
	res.BatchID = jobs[0].BatchID
	res.Jobs = append(ids, res.Jobs...)
}

// Reprocess runs an asset's ingest again. A task still waiting for it is
// left alone; an archived one (failed for good) runs again rather than
// being duplicated; otherwise a new batch and job are recorded and
// handed over. It returns the job that will run.
func (a *App) Reprocess(ctx context.Context, log *slog.Logger, owner uuid.UUID, asset *store.Asset) (uuid.UUID, error) {
	queue, taskID := tasks.QueueOf(tasks.TypeIngest), tasks.IngestID(asset.ID)
	info, err := a.Jobs.Inspector.GetTaskInfo(queue, taskID)
	switch {
	case err == nil && info.State != asynq.TaskStateCompleted:
		p, err := tasks.Decode[tasks.IngestPayload](asynq.NewTask(info.Type, info.Payload))
		if err != nil {
			return uuid.Nil, err
		}
		if info.State == asynq.TaskStateArchived {
			job, err := a.store.JobByID(ctx, p.JobID)
			if err != nil {
				return uuid.Nil, err
			}
			_, dups, err := a.Jobs.Rerun(ctx, log, []store.Job{*job})
			if err != nil {
				return uuid.Nil, err
			}
			if len(dups) > 0 {
				return uuid.Nil, &store.DuplicateError{Of: dups[0].DuplicateOf}
			}
		}
		return p.JobID, nil
	case err != nil && !errors.Is(err, asynq.ErrTaskNotFound) && !errors.Is(err, asynq.ErrQueueNotFound):
		log.Warn("look up ingest task", "task", taskID, "err", err)
		return uuid.Nil, jobs.ErrQueueUnavailable
	}
	var job store.Job
	err = a.store.WithTx(ctx, func(tx *store.Store) error {
		if err := tx.Reprocess(ctx, asset); err != nil {
			return err
		}
		job, err = jobs.Insert(ctx, tx, tasks.IngestPayload{Job: tasks.NewJob(asset.ProjectID), AssetID: asset.ID},
			jobs.NewBatch(owner, store.BatchReprocess))
		return err
	})
	return job.ID, err
}

// statParallel is how many objects finalize checks at once; each may be
// read whole to hash it.
const statParallel = 8

// recordDirectUploads records the size and SHA-256 of originals that
// reached the blob store without a handler seeing them (a browser's PUT
// straight to a bucket), so store.FinalizeUploads checks them like any
// other: an object that is not there stays upload_missing, one whose
// checksum differs from the client's is checksum_mismatch. An object
// larger than declared is deleted and counts as missing.
func (a *App) recordDirectUploads(ctx context.Context, project uuid.UUID, items []store.FinalizeItem) error {
	ids := make([]uuid.UUID, len(items))
	for i, it := range items {
		ids[i] = it.AssetID
	}
	waiting, err := a.store.UnrecordedUploads(ctx, project, ids)
	if err != nil || len(waiting) == 0 {
		return err
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		errs  []error
		slots = make(chan struct{}, statParallel)
	)
	for _, u := range waiting {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			if err := a.recordDirectUpload(ctx, u); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (a *App) recordDirectUpload(ctx context.Context, u store.UnrecordedUpload) error {
	info, err := a.Blobs.Stat(ctx, u.BlobKey)
	switch {
	case errors.Is(err, blob.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("%w: %v", ErrStorage, err)
	case info.Size > u.ByteSize:
		return a.Blobs.Delete(ctx, u.BlobKey)
	}
	return a.store.RecordUpload(ctx, u.ID, info.SHA256, info.Size)
}

// ErrStorage is the blob store failing while finalize checks uploads.
var ErrStorage = errors.New("blob storage unavailable")
