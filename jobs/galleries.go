package jobs

import (
	"github.com/google/uuid"

	"lightbox/store"
	"lightbox/tasks"
)

// GallerySpec builds the gallery:render job that makes an asset's
// watermarked preview for gallery, in project.
func GallerySpec(project, gallery uuid.UUID) store.JobSpec {
	return func(asset, batch, job uuid.UUID) store.Job {
		p := tasks.GalleryPayload{Job: tasks.Job{JobID: job, ProjectID: project}, GalleryID: gallery, AssetID: asset}
		return Row(p, &asset, &batch)
	}
}
