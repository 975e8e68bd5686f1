// Package tasks provides the typed Asynq tasks that the server enqueues and
// the worker runs: type names, payloads, constructors that set each type's
// queue, TaskID, retries and timeout, the retry schedule, and the queue
// weights.
package tasks

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
)

// Task type names.
const (
	TypeIngest     = "asset:ingest"
	TypeDownload   = "asset:download"
	TypeEmbed      = "asset:embed"
	TypeCluster    = "project:cluster"
	TypeExport     = "project:export"
	TypeChainFlush = "chain:flush"
	TypeSweep      = "maintenance:sweep"
)

// Queues, by priority.
const (
	QueueCritical = "critical"
	QueueDefault  = "default"
	QueueLow      = "low"
)

// DefaultWeights is how often each queue is served relative to the others.
var DefaultWeights = map[string]int{QueueCritical: 6, QueueDefault: 3, QueueLow: 1}

// spec is one row of the task table.
type spec struct {
	queue    string
	timeout  time.Duration
	schedule []time.Duration // one delay per retry; len is MaxRetry
}

var table = map[string]spec{
	TypeIngest:     {QueueDefault, 5 * time.Minute, []time.Duration{2 * time.Second, 10 * time.Second, time.Minute}},
	TypeDownload:   {QueueDefault, 5 * time.Minute, []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute}},
	TypeEmbed:      {QueueLow, 2 * time.Minute, []time.Duration{30 * time.Second, 5 * time.Minute, 30 * time.Minute}},
	TypeCluster:    {QueueLow, 10 * time.Minute, []time.Duration{time.Minute, 10 * time.Minute}},
	TypeExport:     {QueueCritical, 30 * time.Minute, []time.Duration{time.Minute, 10 * time.Minute, 30 * time.Minute}},
	TypeChainFlush: {QueueLow, 2 * time.Minute, []time.Duration{5 * time.Second, 15 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute}},
	TypeSweep:      {QueueLow, time.Minute, nil},
}

// QueueOf is the queue tasks of type typ go to.
func QueueOf(typ string) string { return table[typ].queue }

// Job links a task to its row in the jobs table, where the worker records
// its progress.
type Job struct {
	JobID     uuid.UUID `json:"jobId"`
	ProjectID uuid.UUID `json:"projectId"`
}

// IngestPayload asks for an uploaded original to be processed.
type IngestPayload struct {
	Job
	AssetID uuid.UUID `json:"assetId"`
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

// NewIngest is an asset:ingest task, unique per asset.
func NewIngest(p IngestPayload) *asynq.Task {
	return build(TypeIngest, p, IngestID(p.AssetID))
}

// IngestID is the TaskID of an asset's ingest.
func IngestID(asset uuid.UUID) string { return "ingest:" + asset.String() }

// NewDownload is an asset:download task, unique per job.
func NewDownload(p DownloadPayload) *asynq.Task {
	return build(TypeDownload, p, DownloadID(p.JobID))
}

// DownloadID is the TaskID of a URL import job.
func DownloadID(job uuid.UUID) string { return "download:" + job.String() }

// NewEmbed is an asset:embed task, unique per asset and model.
func NewEmbed(p EmbedPayload) *asynq.Task {
	return build(TypeEmbed, p, EmbedID(p.AssetID, p.Model))
}

// EmbedID is the TaskID of an asset's embedding with model.
func EmbedID(asset uuid.UUID, model string) string { return "embed:" + asset.String() + ":" + model }

// NewCluster is a project:cluster task for one scheduled run; the caller
// enqueues it with asynq.ProcessIn to debounce.
func NewCluster(p ClusterPayload) *asynq.Task {
	return build(TypeCluster, p, fmt.Sprintf("cluster:%s:%d", p.ProjectID, p.Run))
}

// NewExport is a project:export task, unique per export.
func NewExport(p ExportPayload) *asynq.Task {
	return build(TypeExport, p, ExportID(p.ExportID))
}

// ExportID is the TaskID of an export.
func ExportID(export uuid.UUID) string { return "export:" + export.String() }

// NewChainFlush is the chain:flush task; one may wait at a time.
func NewChainFlush() *asynq.Task {
	return build(TypeChainFlush, struct{}{}, "chain:flush")
}

// NewSweep is the periodic maintenance:sweep task. It has no TaskID: the
// scheduler makes one each period and a run that is lost is replaced by the next.
func NewSweep() *asynq.Task {
	return build(TypeSweep, struct{}{}, "")
}

func build(typ string, payload any, taskID string) *asynq.Task {
	b, err := json.Marshal(payload)
	if err != nil {
		// Payloads are plain structs of strings and ids; this cannot fail.
		panic(fmt.Sprintf("tasks: encode %s payload: %v", typ, err))
	}
	return New(typ, b, taskID)
}

// New builds a task of type typ from an encoded payload with the options of
// its row in the task table: how recorded jobs are enqueued again.
func New(typ string, payload []byte, taskID string) *asynq.Task {
	s := table[typ]
	opts := []asynq.Option{asynq.Queue(s.queue), asynq.MaxRetry(len(s.schedule)), asynq.Timeout(s.timeout)}
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
