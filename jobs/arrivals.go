package jobs

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/google/uuid"

	"lightbox/blob"
	"lightbox/store"
)

// statParallel is how many objects finalize checks at once; each may be
// read whole to hash it.
const statParallel = 8

// recordArrivals records the size and SHA-256 of originals that reached
// the blob store without a handler seeing them (a browser's PUT straight
// to a bucket), so store.FinalizeUploads checks them like any other: an
// object that is not there stays upload_missing, one whose checksum
// differs from the client's is checksum_mismatch. An object larger than
// declared is deleted and counts as missing.
func (d *Dispatcher) recordArrivals(ctx context.Context, project uuid.UUID, items []store.FinalizeItem) error {
	ids := make([]uuid.UUID, len(items))
	for i, it := range items {
		ids[i] = it.AssetID
	}
	waiting, err := d.Store.UnrecordedUploads(ctx, project, ids)
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
			if err := d.recordArrival(ctx, u); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (d *Dispatcher) recordArrival(ctx context.Context, u store.UnrecordedUpload) error {
	info, err := d.Blobs.Stat(ctx, u.BlobKey)
	switch {
	case errors.Is(err, blob.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("%w: %v", ErrStorage, err)
	case info.Size > u.ByteSize:
		return d.Blobs.Delete(ctx, u.BlobKey)
	}
	return d.Store.RecordUpload(ctx, u.ID, info.SHA256, info.Size)
}

// ErrStorage is the blob store failing while finalize checks uploads.
var ErrStorage = errors.New("blob storage unavailable")
