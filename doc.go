// Module lightbox is a self-hosted bulk photo ingest service: a Gin API that
// hands out signed upload URLs and enqueues typed Asynq tasks, and a worker
// that turns originals into thumbnails, previews, metadata, duplicate groups,
// embeddings, moments, exports and a signed hash chain.
package lightbox
