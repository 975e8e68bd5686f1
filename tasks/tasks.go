// Package tasks provides the typed Asynq tasks that the server enqueues and
// the worker runs: type names, payloads, constructors that set each type's
// queue, TaskID, retries and timeout, the retry schedule, and the queue
// weights.
package tasks

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
)

// Task type names.
const (
	TypeIngest     = "asset:ingest"
	TypeThumbnail  = "asset:thumbnail"
	TypeDownload   = "asset:download"
	TypeEmbed      = "asset:embed"
	TypeCluster    = "project:cluster"
	TypeExport     = "project:export"
	TypeDelete     = "asset:delete"
	TypeEdit       = "edit:apply"
	TypeChainFlush = "chain:flush"
	TypeSweep      = "maintenance:sweep"
	TypeWebhook    = "webhook:deliver"
	TypeGallery    = "gallery:render"
	TypeFaces      = "asset:faces"
	TypeFacesScan  = "project:faces"
	TypeSignals    = "project:signals"
	TypeBackup     = "backup:run"
)

// Queues, by priority.
const (
	// QueueThumbnails holds only thumbnails ahead of ingest: each costs
	// about a quarter of an ingest, so weighted far above the rest it gets
	// most of the workers while a batch's thumbnails are being made (an
	// ingest is picked about once in 70), and a few seconds of them after.
	QueueThumbnails = "thumbnails"
	QueueCritical   = "critical"
	QueueDefault    = "default"
	QueueLow        = "low"
	// QueueFaces holds only face work, below low: an embedding or a
	// cluster run (which makes photos "ai") never waits behind the scans
	// of a whole batch, as it would in low's line. It weighs least, and a
	// scan picked while work waits on the worker's other queues steps
	// aside (worker/faces.go): scans run when nothing else waits.
	QueueFaces = "faces"
)

// DefaultWeights is how often each queue is served relative to the others.
// Asynq lists each queue's name as many times as its weight and shuffles
// the list at every pick, so the weights are kept small: thumbnails 600
// against default 9 keeps an ingest picked about once in 70 while
// thumbnails wait.
var DefaultWeights = map[string]int{QueueThumbnails: 600, QueueCritical: 18, QueueDefault: 9, QueueLow: 3, QueueFaces: 1}

// spec is one row of the task table: everything the rest of Lightbox
// needs to know about a task type. Its handler lives in worker/, in a file
// of its own that registers it beside the handler.
type spec struct {
	queue   string
	timeout time.Duration   // how long one run may take before its context ends
	retries []time.Duration // one delay per retry; len is MaxRetry
	// hasJob: each task is recorded as a row in the jobs table, which the
	// API shows and the worker keeps up to date.
	hasJob bool
	// failsAsset: when the task fails for good, its asset fails with it.
	failsAsset bool
	// writesFiles: a run writes files under its asset's keys (the
	// original, derived files). A run that read the asset before it was
	// deleted may still write them until its timeout ends.
	writesFiles bool
	// defined: added by Define, from outside Lightbox's own types.
	defined bool
}

var table = map[string]spec{
	TypeIngest: {
		queue: QueueDefault, timeout: 5 * time.Minute,
		retries: []time.Duration{2 * time.Second, 10 * time.Second, time.Minute},
		hasJob:  true, failsAsset: true, writesFiles: true,
	},
	// A thumbnail made ahead of its ingest, which makes one too if this
	// fails or is lost: no job row, one quick retry.
	TypeThumbnail: {
		queue: QueueThumbnails, timeout: time.Minute,
		retries:     []time.Duration{time.Second},
		writesFiles: true,
	},
	TypeDownload: {
		queue: QueueDefault, timeout: 5 * time.Minute,
		retries: []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute},
		hasJob:  true, failsAsset: true, writesFiles: true,
	},
	TypeEmbed: {
		queue: QueueLow, timeout: 2 * time.Minute,
		retries: []time.Duration{30 * time.Second, 5 * time.Minute, 30 * time.Minute},
		hasJob:  true,
	},
	TypeCluster: {
		queue: QueueLow, timeout: 10 * time.Minute,
		retries: []time.Duration{time.Minute, 10 * time.Minute},
	},
	TypeExport: {
		queue: QueueCritical, timeout: 30 * time.Minute,
		retries: []time.Duration{time.Minute, 10 * time.Minute, 30 * time.Minute},
		hasJob:  true,
	},
	TypeEdit: {
		queue: QueueDefault, timeout: 5 * time.Minute,
		retries: []time.Duration{2 * time.Second, 10 * time.Second, time.Minute},
		hasJob:  true, writesFiles: true,
	},
	TypeDelete: {
		queue: QueueLow, timeout: 2 * time.Minute,
		retries: []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute},
		hasJob:  true,
	},
	TypeChainFlush: {
		queue: QueueLow, timeout: 2 * time.Minute,
		retries: []time.Duration{5 * time.Second, 15 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute},
	},
	TypeSweep: {queue: QueueLow, timeout: time.Minute},
	// The scheduled backup (BACKUP_SCHEDULE): no job row, as no user owns
	// it (its runs are rows of backup_runs), and no retry: a failed run
	// is recorded and the next period's tries again. The timeout bounds
	// a target that hangs; a first backup of a large library belongs to
	// the CLI.
	TypeBackup: {queue: QueueLow, timeout: 12 * time.Hour},
	TypeWebhook: {
		queue: QueueLow, timeout: time.Minute,
		// Ten retries spread over about four hours; with jitter no wait passes an hour.
		retries: []time.Duration{10 * time.Second, 30 * time.Second, time.Minute, 5 * time.Minute,
			10 * time.Minute, 20 * time.Minute, 30 * time.Minute, 45 * time.Minute, 50 * time.Minute, 50 * time.Minute},
		hasJob: true,
	},
	TypeGallery: {
		queue: QueueDefault, timeout: 2 * time.Minute,
		// A photo added before its preview exists waits for ingest through the retries.
		retries: []time.Duration{10 * time.Second, time.Minute, 5 * time.Minute},
		hasJob:  true,
	},
	// Three retries, the last as far from the second as the second from
	// the first; a provider that is down is waited out without spending them.
	TypeFaces: {
		queue: QueueFaces, timeout: 3 * time.Minute,
		retries: []time.Duration{time.Minute, 10 * time.Minute, 10 * time.Minute},
		hasJob:  true,
	},
	// It only records asset:faces jobs, and records each one once, so a
	// run cut short is simply run again. On the faces queue too: the scans
	// it records wait there anyway.
	TypeFacesScan: {
		queue: QueueFaces, timeout: 10 * time.Minute,
		retries: []time.Duration{10 * time.Second, time.Minute, 10 * time.Minute},
		hasJob:  true,
	},
	// Judging reads each photo's preview again; a run cut short starts
	// over on the photos still unjudged.
	TypeSignals: {
		queue: QueueLow, timeout: 30 * time.Minute,
		retries: []time.Duration{10 * time.Second, time.Minute, 10 * time.Minute},
		hasJob:  true,
	},
}

// Define adds a task type to the table, on queue, recorded as job rows
// when hasJob: for task types that live outside Lightbox's own, such as a
// benchmark's no-op. Call it before any worker starts; it panics on a
// type the table has.
func Define(typ, queue string, hasJob bool) {
	if _, ok := table[typ]; ok {
		panic("tasks: " + typ + " is defined already")
	}
	table[typ] = spec{queue: queue, timeout: time.Minute, hasJob: hasJob, defined: true}
}

// QueueOf is the queue tasks of type typ go to.
func QueueOf(typ string) string { return table[typ].queue }

// Timeout is how long one run of a task of type typ may take before its
// context ends.
func Timeout(typ string) time.Duration { return table[typ].timeout }

// HasJob reports whether tasks of type typ are recorded as job rows.
func HasJob(typ string) bool { return table[typ].hasJob }

// FailsAsset reports whether a task of type typ that fails for good fails
// its asset too: the asset cannot become ready without it.
func FailsAsset(typ string) bool { return table[typ].failsAsset }

// FileWritesEnd is how long after it starts a run of any task type that
// writes files under an asset's keys may still write them: the longest
// timeout among those types.
func FileWritesEnd() time.Duration {
	var longest time.Duration
	for _, s := range table {
		if s.writesFiles {
			longest = max(longest, s.timeout)
		}
	}
	return longest
}

// Types lists Lightbox's own task types (not those added by Define), in
// a stable order: each has a handler in the worker.
func Types() []string {
	var out []string
	for typ, s := range table {
		if !s.defined {
			out = append(out, typ)
		}
	}
	slices.Sort(out)
	return out
}

// JobTypes lists the task types that have job rows, in a stable order.
func JobTypes() []string {
	var out []string
	for typ, s := range table {
		if s.hasJob {
			out = append(out, typ)
		}
	}
	slices.Sort(out)
	return out
}

// Args is a task's typed payload. It names its own type and TaskID, so a
// task and its job row are built from the payload alone.
type Args interface {
	Kind() string
	TaskID() string
}

// JobArgs is the payload of a task type that has a job row.
type JobArgs interface {
	Args
	Ref() Job
}

// AssetArgs is a job payload about one asset, whose job row names it (and
// goes with it when the asset is deleted).
type AssetArgs interface {
	JobArgs
	Asset() uuid.UUID
}

// Job links a task to its row in the jobs table, where the worker records
// its progress.
type Job struct {
	JobID     uuid.UUID `json:"jobId"`
	ProjectID uuid.UUID `json:"projectId"`
}

// NewJob links a task to a new job row in project.
func NewJob(project uuid.UUID) Job { return Job{JobID: uuid.New(), ProjectID: project} }

// Ref is the job row the task belongs to.
func (j Job) Ref() Job { return j }

// IngestPayload asks for an uploaded original to be processed.
type IngestPayload struct {
	Job
	AssetID uuid.UUID `json:"assetId"`
}

// ThumbnailPayload asks for an uploaded original's thumbnail ahead of its
// ingest.
type ThumbnailPayload struct {
	ProjectID uuid.UUID `json:"projectId"`
	AssetID   uuid.UUID `json:"assetId"`
}

// DownloadPayload asks for a URL to be fetched into a new asset, then ingested.
type DownloadPayload struct {
	Job
	AssetID uuid.UUID `json:"assetId"`
	URL     string    `json:"url"`
}

// EmbedPayload asks for an asset's embedding with one model.
type EmbedPayload struct {
	Job
	AssetID uuid.UUID `json:"assetId"`
	Model   string    `json:"model"`
}

// ClusterPayload asks for a project's moments, bursts and duplicate groups
// to be rebuilt. Run numbers the scheduled run, so each has its own TaskID.
type ClusterPayload struct {
	ProjectID uuid.UUID `json:"projectId"`
	Run       int64     `json:"run"`
}

// ExportPayload asks for an export archive to be built.
type ExportPayload struct {
	Job
	ExportID uuid.UUID `json:"exportId"`
}

// DeletePayload asks for a deleted asset's bytes and derived files to be
// removed. The asset's row is gone, so the payload carries their keys.
type DeletePayload struct {
	Job
	AssetID uuid.UUID `json:"assetId"`
	Keys    []string  `json:"keys"`
}

// EditPayload asks for an edit version to be rendered onto its asset.
type EditPayload struct {
	Job
	AssetID uuid.UUID `json:"assetId"`
	EditID  uuid.UUID `json:"editId"`
}

// WebhookPayload asks for one webhook delivery to be sent. Its job has the
// delivery's id; a ping's job has no project.
type WebhookPayload struct {
	Job
	DeliveryID uuid.UUID `json:"deliveryId"`
}

// GalleryPayload asks for an asset's watermarked preview for one gallery.
type GalleryPayload struct {
	Job
	GalleryID uuid.UUID `json:"galleryId"`
	AssetID   uuid.UUID `json:"assetId"`
}

// FacesPayload asks for the faces in an asset's preview.
type FacesPayload struct {
	Job
	AssetID uuid.UUID `json:"assetId"`
}

func (IngestPayload) Kind() string       { return TypeIngest }
func (p IngestPayload) TaskID() string   { return IngestID(p.AssetID) }
func (p IngestPayload) Asset() uuid.UUID { return p.AssetID }

// IngestID is the TaskID of an asset's ingest.
func IngestID(asset uuid.UUID) string { return "ingest:" + asset.String() }

func (ThumbnailPayload) Kind() string     { return TypeThumbnail }
func (p ThumbnailPayload) TaskID() string { return "thumbnail:" + p.AssetID.String() }

func (DownloadPayload) Kind() string       { return TypeDownload }
func (p DownloadPayload) TaskID() string   { return DownloadID(p.JobID) }
func (p DownloadPayload) Asset() uuid.UUID { return p.AssetID }

// DownloadID is the TaskID of a URL import job.
func DownloadID(job uuid.UUID) string { return "download:" + job.String() }

func (EmbedPayload) Kind() string       { return TypeEmbed }
func (p EmbedPayload) TaskID() string   { return EmbedID(p.AssetID, p.Model) }
func (p EmbedPayload) Asset() uuid.UUID { return p.AssetID }

// EmbedID is the TaskID of an asset's embedding with model.
func EmbedID(asset uuid.UUID, model string) string { return "embed:" + asset.String() + ":" + model }

func (ClusterPayload) Kind() string     { return TypeCluster }
func (p ClusterPayload) TaskID() string { return fmt.Sprintf("cluster:%s:%d", p.ProjectID, p.Run) }

func (ExportPayload) Kind() string     { return TypeExport }
func (p ExportPayload) TaskID() string { return ExportID(p.ExportID) }

// ExportID is the TaskID of an export.
func ExportID(export uuid.UUID) string { return "export:" + export.String() }

// A delete's job row names no asset: the asset is gone when it is recorded.
func (DeletePayload) Kind() string     { return TypeDelete }
func (p DeletePayload) TaskID() string { return "delete:" + p.AssetID.String() }

func (EditPayload) Kind() string       { return TypeEdit }
func (p EditPayload) TaskID() string   { return "edit:" + p.EditID.String() + ":" + p.AssetID.String() }
func (p EditPayload) Asset() uuid.UUID { return p.AssetID }

func (WebhookPayload) Kind() string     { return TypeWebhook }
func (p WebhookPayload) TaskID() string { return WebhookID(p.DeliveryID) }

// WebhookID is the TaskID of a webhook delivery.
func WebhookID(delivery uuid.UUID) string { return "webhook:" + delivery.String() }

func (GalleryPayload) Kind() string { return TypeGallery }
func (p GalleryPayload) TaskID() string {
	return "gallery:" + p.GalleryID.String() + ":" + p.AssetID.String()
}
func (p GalleryPayload) Asset() uuid.UUID { return p.AssetID }

// FacesScanPayload asks for an asset:faces job for each photo of a
// project that was ingested without one: the photos already in it when it
// switched faces on.
type FacesScanPayload struct {
	Job
}

// NewFaces is the asset:faces job of asset in project. Its id derives
// from the asset, so however many times it is recorded it names one job.
func NewFaces(project, asset uuid.UUID) FacesPayload {
	return FacesPayload{Job: Job{JobID: uuid.NewSHA1(asset, []byte("faces")), ProjectID: project}, AssetID: asset}
}

func (FacesPayload) Kind() string       { return TypeFaces }
func (p FacesPayload) TaskID() string   { return FacesID(p.AssetID) }
func (p FacesPayload) Asset() uuid.UUID { return p.AssetID }

// FacesID is the TaskID of an asset's faces.
func FacesID(asset uuid.UUID) string { return "faces:" + asset.String() }

func (FacesScanPayload) Kind() string     { return TypeFacesScan }
func (p FacesScanPayload) TaskID() string { return "faces-scan:" + p.JobID.String() }

// SignalsPayload asks for the judged signals (focus, motion, exposure,
// detail, warnings, score) of each photo of a project ingested before
// they existed, read from its stored preview.
type SignalsPayload struct {
	Job
}

func (SignalsPayload) Kind() string     { return TypeSignals }
func (p SignalsPayload) TaskID() string { return "signals:" + p.JobID.String() }

// ChainFlushID is the TaskID of chain:flush: one may wait at a time.
const ChainFlushID = "chain:flush"

// NewChainFlush is the chain:flush task.
func NewChainFlush() *asynq.Task {
	return New(TypeChainFlush, []byte("{}"), ChainFlushID)
}

// NewSweep is the periodic maintenance:sweep task. It has no TaskID: the
// scheduler makes one each period and a run that is lost is replaced by the next.
func NewSweep() *asynq.Task {
	return New(TypeSweep, []byte("{}"), "")
}

// NewBackup is the scheduled backup:run task. Like the sweep it has no
// TaskID; the scheduler's Unique keeps one per period.
func NewBackup() *asynq.Task {
	return New(TypeBackup, []byte("{}"), "")
}

// NewTask is the task a payload describes, with its type's options.
func NewTask(a Args) *asynq.Task { return New(a.Kind(), Encode(a), a.TaskID()) }

// Encode is a payload as tasks and job rows carry it.
func Encode(a Args) []byte {
	b, err := json.Marshal(a)
	if err != nil {
		// Payloads are plain structs of strings and ids; this cannot fail.
		panic(fmt.Sprintf("tasks: encode %s payload: %v", a.Kind(), err))
	}
	return b
}

// New builds a task of type typ from an encoded payload with the options of
// its row in the task table: how recorded jobs are enqueued again.
func New(typ string, payload []byte, taskID string) *asynq.Task {
	return NewOn(table[typ].queue, typ, payload, taskID)
}

// NewOn is New on queue: a recorded job goes back to the queue its row
// names, which is its type's unless the row was recorded before the type
// moved (face scans left low for a queue of their own), so the sweep
// finds its task where it was put.
func NewOn(queue, typ string, payload []byte, taskID string) *asynq.Task {
	s := table[typ]
	opts := []asynq.Option{asynq.Queue(queue), asynq.MaxRetry(len(s.retries)), asynq.Timeout(s.timeout)}
	if taskID != "" {
		opts = append(opts, asynq.TaskID(taskID))
	}
	return asynq.NewTask(typ, payload, opts...)
}

// Decode reads a task's payload. A payload that does not decode will never
// decode, so the error is permanent.
func Decode[T any](t *asynq.Task) (T, error) {
	var p T
	if err := json.Unmarshal(t.Payload(), &p); err != nil {
		return p, Permanent(fmt.Errorf("%s payload: %w", t.Type(), err))
	}
	return p, nil
}
