// Package jobs provides the job lifecycle the server and the worker share:
// a job is recorded with the change it belongs to (Insert), handed to Asynq
// after the commit as the queue caps admit it, run under a Tracker that
// records its state, cancelled, run again, and repaired by the sweep and the
// watch when a crash or an outage lost part of it. The ends it records
// (a batch that ended, a failure that failed an asset) go to its Hooks,
// where app/ tells the webhooks; the use cases that record jobs (finalize,
// import, export, edits, galleries) are in app/ too. The worker keeps the
// Asynq server, the middleware that calls Tracker.Run, and one handler per
// task type; the task table (tasks/tasks.go) says what each type is.
//
// # States and hand-over
//
// A job row's status (store.JobStatus, whose constants say who moves a job
// out of each), and what moves it:
//
//	in the caller's transaction     after the commit, detached (commit hook)
//	---------------------------     ----------------------------------------
//	Insert ──► queued, waiting ──── hand-over: Enqueue, then Admit ───┐
//	           (enqueued_at null)   under the queue caps, or at once  │
//	             ▲        ▲         outside a running batch           ▼
//	             │        │                              queued, in Asynq ◄──┐
//	             │        │ reconcile: Asynq lost          │                 │
//	             │        └───────── the task ◄────────────┤ Asynq starts it │
//	             │                                         ▼ (Tracker.Run)   │
//	             │                                      running ─────────────┘
//	             │                                         │    a retry left
//	             │                                         ├─► done    (nextRunAt),
//	             │                                         │    interrupted, an
//	             └───── Rerun ◄──────────────── failed ◄───┘    outage waited out
//
//	Cancel (a batch, an export, a deleted asset): queued or running ─► canceled
//	Dismiss: failed ─► canceled
//
// The sweep hands over stranded jobs (never handed over) and reconciles
// live jobs whose rows have been quiet; the watch does the same at once
// after Redis lost its data or a worker died.
//
// A job that ends (done, failed, canceled) leaves room under its user's
// caps: CancelBatch and the sweep admit the next waiting jobs at once, the
// Tracker once the jobs it saw end make a quarter of the smaller cap's
// room or 250 ms after the first of them. Jobs are committed first and
// enqueued after, so a lost enqueue leaves a job the sweep finds, never
// work that nobody recorded.
//
// # Terms
//
//   - Hand-over: claiming a recorded job (enqueued_at, store.ClaimEnqueue)
//     and enqueueing its task in Asynq under the job's TaskID; a claim
//     whose send failed is given back. Only a handed-over job counts under
//     the caps, and two callers admitting the same job send it once.
//   - Queue caps (store.QueueCaps): the most jobs of one batch (BATCH_WINDOW)
//     and of one user's batches (USER_WINDOW) handed over in one queue at
//     once. A user queue (store.UserQueue) is one user's batch jobs in one
//     queue, the unit the user cap counts.
//   - Admission (Admit): handing over a user queue's waiting jobs as far as
//     its caps allow, the oldest batch first, within it the oldest job.
//   - Stranded job: recorded, not handed over, and past the time its commit
//     hook would have handed it over; the sweep hands it over.
//   - Reconcile: comparing jobs Postgres says are live with Asynq's own
//     state of their tasks, and repairing the difference (see Reconcile).
//   - Rerun: a failed job queued again under the same TaskID with a full
//     set of retries. Dismiss: a failed job given up (canceled).
//   - Cancel mark: a Redis key saying a project may have canceled jobs, so
//     only its tasks pay for a read of their job's status before they run
//     (see MarkCanceling).
//   - Interrupted: a run the worker's own stop cut short; Asynq puts its
//     task back, and it spends no attempt.
//   - Stale run: a run a later run of the same task took over
//     (store.ErrStaleRun); it records no end.
//   - TaskID in use: an enqueue that finds the TaskID held by a task Asynq
//     still keeps; usually the job's own, which is success.
//   - Discard: a blob key recorded to be deleted by the sweep once nothing
//     can write it any more, unless a row comes to name it (store/discards.go).
//   - Rowless tasks: cluster runs and the chain flush have no job row; the
//     sweep compares them with Asynq on their own (rowless.go). Thumbnails
//     queued ahead of ingest (app.Finalize) have none either, and nothing
//     repeats a lost one: the ingest makes any thumbnail not made first.
//
// # Choices
//
// Queue caps: Asynq holds at most BATCH_WINDOW (64) jobs of one batch and
// USER_WINDOW (128) of one user's batches in each queue; the rest wait in
// Postgres and are admitted as jobs end, the user's oldest batch first,
// within it the oldest job. A 5-photo batch started after a 200-photo one
// goes ahead of most of it, and another user's photos wait behind at most
// 128 of the first user's, however many chunks (each its own batch) the
// first user's uploader finalized. Within one user the oldest batch goes
// first, so a user's own small batch after a chunked upload of theirs waits
// for it. Failed jobs retried (POST /v1/batches/{id}/retry, the admin page) go through the same
// caps. Keep USER_WINDOW above the concurrency of all workers together, or
// one user alone cannot keep them busy.
//
// Job states are written by the worker's middleware (running with the attempt,
// done, failed with a stable code, queued again with nextRunAt), so a retry
// started in Asynqmon shows in the API. Bad input (empty_file,
// unsupported_format, corrupt_image, too_many_pixels, too_large) fails at once
// without retries; a rate-limited call waits without spending a retry. Retry
// jitter is derived from the task, so the recorded nextRunAt is the time Asynq
// really retries. A worker saves and publishes the states of all its tasks
// together every 5 ms, so they show a few ms late; a task's handler returns
// only once its state is saved, and a job whose state was lost with a killed
// worker is run again by the sweep once its row has been quiet a while. A
// stopped worker (SIGTERM) gives its tasks SHUTDOWN_TIMEOUT to end, hands the
// others back to the queue at once, records their jobs queued with code
// interrupted (no attempt spent, no asset, export or webhook delivery failed,
// even on its last attempt) and exits once their handlers have returned, 30 s
// at most after that. Each run of an export writes under a token of its own
// and builds its archive under its own key, so a handed-back run still ending
// when the next run has started changes nothing: it cancels and fails nothing
// and leaves the next run's archive alone. A run's key is kept as a discard
// from before it writes until its export records the archive, so one no export
// keeps (its run was taken over, cancelled or killed) is deleted by the sweep
// once the task's timeout (30 minutes) and 5 more have passed; a run that
// would record its archive after that deletes it and is retried. An export
// is built in steps of a few photos whose renders (parts) are the export's,
// not a run's: a run yields its slot between steps while other work waits
// (a rate-limited wait, no attempt spent), and the next run goes on from the
// parts recorded. Each part is a discard due a day after it was drawn, made
// due at once when the archive is built or the export canceled (see
// DropExportParts). At most EXPORT_USER_RUNNING exports of one user are
// handed over at once (a per-queue user cap, store.QueueCaps.ByQueue).
//
// The sweep reconciles every queued or running job whose row has been quiet
// for 2 minutes (500 a sweep, continuing where the last stopped) with Asynq's
// own state: a task Redis lost is handed over again under its batch's caps
// (a lost job no longer holds a place under them); a task archived while its job is
// still live (an outage, such as Postgres down past the retries) runs again; a
// task that completed without its job being recorded is recorded as done.
// Waiting, scheduled and running tasks are left alone. After a FLUSHALL the
// worker's watch (every 2 s) finds the queue registry gone and puts waiting
// jobs back at once, running ones once live workers have listed theirs.
// Cluster runs have no job rows; the sweep checks each run still waiting 2 minutes after it was due
// the same way (500 a sweep, oldest first): a task Redis lost is enqueued
// again, and an archived one (its start failed through every retry) runs
// again, since a waiting run absorbs every later request of its project. While
// attestations wait, each sweep asks for a chain flush, and runs again a flush
// that an outage archived (it would otherwise hold the flush's TaskID for
// good). Webhook events whose deliveries were never recorded (see Webhooks)
// are told again a minute after the state they report (500 of each kind a
// sweep, oldest first).
//
// Embedding jobs follow ingest outside the upload's batch: a batch is the work
// the request started (ingest), and the three phases a user watches come from
// asset stages. A URL import's batch holds its downloads and the ingests that
// follow them; a download that ends after its batch was cancelled keeps its
// photo, with its ingest canceled like the batch's other waiting work (a
// finished batch is reopened instead).
package jobs
