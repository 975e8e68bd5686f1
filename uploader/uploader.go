// Package uploader sends files and folders to a Lightbox server through its
// REST API, as `lightbox upload` does: it hashes each file, skips those whose
// SHA-256 the project already holds, prepares the rest in chunks, PUTs the
// bytes to the signed URLs with adaptive concurrency, finalizes them, and
// follows the project's event stream until the work they started has ended.
// Running it again over the same files resumes an interrupted run.
package uploader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"lightbox/wait"
)

// Options say what to upload where.
type Options struct {
	// URL is the server's base URL; APIKey authenticates every API call.
	URL, APIKey string
	// ProjectID names an existing project. Otherwise NewTitle names one:
	// the caller's active project with that title, made when there is
	// none, so the same command run again resumes into the same project.
	ProjectID, NewTitle string
	// Paths are files and folders; folders are walked.
	Paths []string
	// Concurrency is the number of PUTs in flight to start with (4 when
	// zero); it halves on refusals and server errors and grows again on
	// success, up to four times the start.
	Concurrency int
	// ChunkSize is the most files per prepare and finalize call (100 when
	// zero); a smaller budget on the server makes it smaller.
	ChunkSize int
	// HTTPClient sends every request (http.DefaultClient when nil).
	HTTPClient *http.Client
	// Report is told of everything that happens, one call at a time.
	Report func(Event)
}

// EventKind names what an Event tells.
type EventKind string

// The events a run reports.
const (
	EventScanned     EventKind = "scanned"      // Counts: files found, bytes, ignored
	EventIgnored     EventKind = "ignored"      // Path: a file of a format the service does not take
	EventProject     EventKind = "project"      // ProjectID, Message: the title; Code "created" when made
	EventSkipped     EventKind = "skipped"      // Path, AssetID of the asset that holds the same bytes, or Message
	EventBytes       EventKind = "bytes"        // Bytes: more bytes sent (negative when a PUT starts over)
	EventUploaded    EventKind = "uploaded"     // Path, AssetID, BatchID: finalized and queued
	EventFailed      EventKind = "failed"       // Path, Stage, Code, Message
	EventRetry       EventKind = "retry"        // Path when a PUT, Message: what failed, WaitSeconds
	EventRateLimited EventKind = "rate_limited" // Message: the request refused (429), WaitSeconds: the wait it asked for
	EventConcurrency EventKind = "concurrency"  // Concurrency: PUTs now allowed in flight
	EventUploadsDone EventKind = "uploads_done" // Counts
	EventProcessing  EventKind = "processing"   // Counts: the server's work on the uploads
	EventDone        EventKind = "done"         // Counts
)

// Event is one thing a run reports; --json prints each as a line.
type Event struct {
	Kind        EventKind `json:"event"`
	Path        string    `json:"path,omitempty"`
	AssetID     string    `json:"assetId,omitempty"`
	BatchID     string    `json:"batchId,omitempty"`
	ProjectID   string    `json:"projectId,omitempty"`
	Stage       string    `json:"stage,omitempty"`
	Code        string    `json:"code,omitempty"`
	Message     string    `json:"message,omitempty"`
	Bytes       int64     `json:"bytes,omitempty"`
	WaitSeconds float64   `json:"waitSeconds,omitempty"`
	Concurrency int       `json:"concurrency,omitempty"`
	Counts      *Counts   `json:"counts,omitempty"`
}

// clean is ev with its text shown safely on a terminal (see Clean).
func (ev Event) clean() Event {
	for _, f := range []*string{&ev.Path, &ev.AssetID, &ev.BatchID, &ev.ProjectID, &ev.Stage, &ev.Code, &ev.Message} {
		*f = Clean(*f)
	}
	return ev
}

// Counts sum up a run.
type Counts struct {
	Files        int   `json:"files"` // files of accepted formats found
	Bytes        int64 `json:"bytes"`
	Ignored      int   `json:"ignored"`
	Skipped      int   `json:"skipped"`  // already held by the project
	Uploaded     int   `json:"uploaded"` // finalized by this run
	UploadFailed int   `json:"uploadFailed"`
	Jobs         int   `json:"jobs"`      // processing jobs this run's uploads started
	Processed    int   `json:"processed"` // of those, ended well
	JobsFailed   int   `json:"jobsFailed"`
	Searchable   int   `json:"searchable"` // uploads seen reaching search
	// XMP sidecars applied to their photos' assets, and those not sent
	// (no photo, too large) or not applied.
	SidecarsSent    int `json:"sidecarsSent"`
	SidecarsSkipped int `json:"sidecarsSkipped"`
}

// Stages a file fails in.
const (
	StageUpload     = "upload"
	StageProcessing = "processing"
	StageSidecar    = "sidecar"
)

// Failure is a file that did not make it.
type Failure struct {
	Path, Stage, Code, Message string
}

// Result is what a run did.
type Result struct {
	ProjectID string
	Counts    Counts
	Failures  []Failure
	Batches   []string
	// SidecarsSkipped are the XMP sidecars not sent or not applied, each
	// with why; they fail nothing.
	SidecarsSkipped []Failure
}

// upload is one file on its way.
type upload struct {
	f         *file
	assetID   string
	url       string
	headers   map[string]string
	expires   time.Time
	margin    time.Duration // how close to expires a PUT is not started
	sent      bool          // the server holds the bytes already (an earlier run PUT them)
	reprepare int
}

type run struct {
	o       Options
	api     *client
	win     *window
	project string
	tracker *tracker
	// origins are where bytes may go: the server's and the upload
	// origins it declared at the start of the run.
	origins map[string]bool

	mu       sync.Mutex
	chunk    int
	res      Result
	report   func(Event)
	uploaded map[string]*file // asset id → file
	sidecars []sidecarSend    // to send once the photos are uploaded
}

// Run uploads o.Paths. Files that fail are in the Result's Failures; the
// error is for what ends the whole run: no such project, a refused key,
// a server gone for minutes, or ctx ending (then running again resumes).
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.ChunkSize <= 0 {
		o.ChunkSize = 100
	}
	if o.HTTPClient == nil {
		o.HTTPClient = http.DefaultClient
	}
	r := &run{o: o, chunk: o.ChunkSize, uploaded: map[string]*file{}, origins: map[string]bool{}}
	var reportMu sync.Mutex
	r.report = func(ev Event) {
		if o.Report == nil {
			return
		}
		reportMu.Lock()
		defer reportMu.Unlock()
		o.Report(ev.clean())
	}
	r.win = newWindow(o.Concurrency, min(4*o.Concurrency, 64))
	r.win.onResize = func(n int) { r.report(Event{Kind: EventConcurrency, Concurrency: n}) }
	server, ok := originOf(o.URL)
	if !ok {
		return nil, fmt.Errorf("%q is not an http:// or https:// URL", o.URL)
	}
	r.origins[server] = true
	// A redirect is followed only within the origins bytes may go to.
	hc := *o.HTTPClient
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if to, _ := originOf(req.URL.String()); !r.allowed(to) {
			return fmt.Errorf("redirected to %s, which is neither the server nor the storage it names", to)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	r.o.HTTPClient = &hc
	r.api = &client{base: strings.TrimRight(o.URL, "/"), key: o.APIKey, http: &hc, report: r.report, slowDown: r.win.failure}

	files, ignored, err := scan(o.Paths)
	if err != nil {
		return nil, err
	}
	ignored, skippedSidecars := pairSidecars(files, ignored)
	for _, s := range skippedSidecars {
		r.skipSidecar(s.path, "", s.why)
	}
	for _, p := range ignored {
		r.report(Event{Kind: EventIgnored, Path: p})
	}
	r.res.Counts.Files, r.res.Counts.Ignored = len(files), len(ignored)
	for _, f := range files {
		r.res.Counts.Bytes += f.size
	}
	r.report(Event{Kind: EventScanned, Counts: r.counts()})

	if err := r.uploadOrigins(ctx); err != nil {
		return nil, err
	}
	if err := r.resolveProject(ctx); err != nil {
		return nil, err
	}
	r.res.ProjectID = r.project
	held, err := r.holdings(ctx)
	if err != nil {
		return r.result(), err
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.tracker = newTracker(r)
	followDone := make(chan struct{})
	go func() {
		defer close(followDone)
		r.tracker.follow(ctx)
	}()
	defer func() { cancel(nil); <-followDone }()

	r.pipeline(ctx, cancel, files, held)
	if err := context.Cause(ctx); err != nil {
		return r.result(), err
	}
	r.sendSidecars(ctx)
	if err := context.Cause(ctx); err != nil {
		return r.result(), err
	}
	r.report(Event{Kind: EventUploadsDone, Counts: r.counts()})

	if err := r.tracker.wait(ctx); err != nil {
		return r.result(), err
	}
	if err := r.jobFailures(ctx); err != nil {
		return r.result(), err
	}
	r.report(Event{Kind: EventDone, Counts: r.counts()})
	return r.result(), nil
}

func (r *run) counts() *Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.res.Counts
	return &c
}

func (r *run) result() *Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.res
	out.Failures = append([]Failure(nil), r.res.Failures...)
	out.Batches = append([]string(nil), r.res.Batches...)
	out.SidecarsSkipped = append([]Failure(nil), r.res.SidecarsSkipped...)
	return &out
}

// chunkSize is the most files a prepare or finalize call takes now.
func (r *run) chunkSize() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.chunk
}

// uploadOrigins asks the server, once per run, where its upload URLs
// lead besides itself (its storage's origin): bytes go nowhere else, so a
// server cannot send a file, or the headers it names, to another host.
func (r *run) uploadOrigins(ctx context.Context) error {
	var s struct {
		UploadOrigins []string `json:"uploadOrigins"`
	}
	if err := r.api.call(ctx, http.MethodGet, "/v1/session", nil, &s); err != nil {
		return fmt.Errorf("session: %w", err)
	}
	for _, o := range s.UploadOrigins {
		if origin, ok := originOf(o); ok {
			r.origins[origin] = true
		}
	}
	return nil
}

// allowed reports whether bytes may go to origin.
func (r *run) allowed(origin string) bool {
	return origin != "" && r.origins[origin]
}

// originOf is raw's origin as scheme://host[:port], lower case and
// without the scheme's default port, for http and https URLs only.
func originOf(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", false
	}
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	switch {
	case scheme != "http" && scheme != "https":
		return "", false
	case scheme == "http" && port == "80", scheme == "https" && port == "443":
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, true
}

// putHeaders are the only headers of a prepare answer a PUT carries: what
// the storage's signature covers. Anything else a server names (a
// credential, a cookie, a forwarded address) stays here.
var putHeaders = []string{"Content-Type", "If-None-Match"}

// fail records a file that did not make it.
func (r *run) fail(f *file, stage, code, msg string) {
	code, msg = Clean(code), Clean(msg)
	r.mu.Lock()
	r.res.Failures = append(r.res.Failures, Failure{Path: f.path, Stage: stage, Code: code, Message: msg})
	if stage == StageUpload {
		r.res.Counts.UploadFailed++
	}
	r.mu.Unlock()
	r.report(Event{Kind: EventFailed, Path: f.path, Stage: stage, Code: code, Message: msg})
}

func (r *run) failErr(f *file, err error) {
	var ae *APIError
	if errors.As(err, &ae) {
		r.fail(f, StageUpload, ae.Code, ae.Message)
		return
	}
	r.fail(f, StageUpload, "error", err.Error())
}

func (r *run) skip(f *file, asset, why string) {
	r.mu.Lock()
	r.res.Counts.Skipped++
	r.mu.Unlock()
	r.sidecarFor(f, asset)
	r.report(Event{Kind: EventSkipped, Path: f.path, AssetID: asset, Message: why})
}

type projectJSON struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Status string `json:"status"`
}

type page[T any] struct {
	Items    []T `json:"items"`
	PageInfo struct {
		NextCursor *string `json:"nextCursor"`
	} `json:"pageInfo"`
}

// each calls fn for every item of a paged list.
func each[T any](ctx context.Context, c *client, path string, fn func(T)) error {
	cursor := ""
	for {
		var p page[T]
		q := url.Values{"limit": {"200"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		if err := c.call(ctx, http.MethodGet, path+"?"+q.Encode(), nil, &p); err != nil {
			return err
		}
		for _, it := range p.Items {
			fn(it)
		}
		if p.PageInfo.NextCursor == nil || *p.PageInfo.NextCursor == "" {
			return nil
		}
		cursor = *p.PageInfo.NextCursor
	}
}

func (r *run) resolveProject(ctx context.Context) error {
	if r.o.ProjectID != "" {
		var p projectJSON
		if err := r.api.call(ctx, http.MethodGet, "/v1/projects/"+url.PathEscape(r.o.ProjectID), nil, &p); err != nil {
			return fmt.Errorf("project %s: %w", r.o.ProjectID, err)
		}
		r.project = p.ID
		r.report(Event{Kind: EventProject, ProjectID: p.ID, Message: p.Title})
		return nil
	}
	var found *projectJSON
	err := each(ctx, r.api, "/v1/projects", func(p projectJSON) {
		if found == nil && p.Status == "active" && p.Title == strings.TrimSpace(r.o.NewTitle) {
			found = &p
		}
	})
	if err != nil {
		return fmt.Errorf("list projects: %w", err)
	}
	code := ""
	if found == nil {
		found = &projectJSON{}
		if err := r.api.call(ctx, http.MethodPost, "/v1/projects", map[string]string{"title": r.o.NewTitle}, found); err != nil {
			return fmt.Errorf("create project: %w", err)
		}
		code = "created"
	}
	r.project = found.ID
	r.report(Event{Kind: EventProject, ProjectID: found.ID, Message: found.Title, Code: code})
	return nil
}

// holding is what the project holds of some bytes.
type holding struct {
	asset    string
	filename string
	// pending: the bytes arrived but were never finalized (a run ended
	// between PUT and finalize); finalizing the asset finishes it.
	pending bool
}

// holdings lists the project's assets by SHA-256.
func (r *run) holdings(ctx context.Context) (map[string]holding, error) {
	type assetJSON struct {
		ID       string  `json:"id"`
		Filename string  `json:"filename"`
		Checksum *string `json:"checksumSha256"`
		Flags    struct {
			Status string `json:"status"`
		} `json:"flags"`
	}
	held := map[string]holding{}
	err := each(ctx, r.api, "/v1/projects/"+r.project+"/assets", func(a assetJSON) {
		if a.Checksum == nil {
			return
		}
		switch a.Flags.Status {
		case "failed":
			// A failed asset does not hold its bytes: sending them again
			// is how a run tries again.
		case "pending_upload":
			if _, ok := held[*a.Checksum]; !ok {
				held[*a.Checksum] = holding{asset: a.ID, filename: a.Filename, pending: true}
			}
		default:
			held[*a.Checksum] = holding{asset: a.ID, filename: a.Filename}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("list the project's assets: %w", err)
	}
	return held, nil
}

// pipeline hashes, prepares, PUTs and finalizes files; a failure of the
// whole run cancels ctx with its cause.
func (r *run) pipeline(ctx context.Context, abort context.CancelCauseFunc, files []*file, held map[string]holding) {
	hashed := make(chan *file, 64)
	hashing := make(chan struct{})
	go func() {
		defer close(hashing)
		hashAll(ctx, files, min(4, runtime.NumCPU()), hashed, func(f *file, err error) {
			r.fail(f, StageUpload, "unreadable", err.Error())
		})
	}()
	ready := make(chan *upload, r.o.ChunkSize)
	go func() {
		defer close(ready)
		if err := r.prepareLoop(ctx, hashed, held, ready); err != nil {
			abort(err)
		}
	}()
	sent := make(chan *upload, r.o.ChunkSize)
	var wg sync.WaitGroup
	for range r.win.max {
		wg.Go(func() {
			for u := range ready {
				if u.sent || r.put(ctx, u) {
					select {
					case sent <- u:
					case <-ctx.Done():
					}
				}
			}
		})
	}
	go func() {
		wg.Wait()
		close(sent)
	}()
	if err := r.finalizeLoop(ctx, sent); err != nil {
		abort(err)
	}
	// Drain, so every goroutine ends before Run returns.
	for range sent {
	}
	<-hashing
}

// gather waits for a first hashed file to send, then takes what else
// arrives within a moment, up to a chunk. It returns nil at the end.
func (r *run) gather(ctx context.Context, in <-chan *file, keep func(*file) bool) []*file {
	var out []*file
	var linger <-chan time.Time
	for {
		if len(out) >= r.chunkSize() {
			return out
		}
		select {
		case f, ok := <-in:
			if !ok {
				return out
			}
			if keep(f) {
				out = append(out, f)
				if linger == nil {
					linger = time.After(200 * time.Millisecond)
				}
			}
		case <-linger:
			return out
		case <-ctx.Done():
			return nil
		}
	}
}

func (r *run) prepareLoop(ctx context.Context, in <-chan *file, held map[string]holding, out chan<- *upload) error {
	seen := map[string]*file{}
	var resumed []*upload
	keep := func(f *file) bool {
		if first, ok := seen[f.sum]; ok {
			r.skip(f, "", "the same bytes as "+first.path)
			return false
		}
		seen[f.sum] = f
		h, ok := held[f.sum]
		switch {
		case !ok:
			return true
		case h.pending && h.filename == f.name:
			resumed = append(resumed, &upload{f: f, assetID: h.asset, sent: true})
			return false
		case h.pending:
			return true
		}
		r.skip(f, h.asset, "")
		return false
	}
	for {
		chunk := r.gather(ctx, in, keep)
		for _, u := range resumed {
			select {
			case out <- u:
			case <-ctx.Done():
				return nil
			}
		}
		resumed = resumed[:0]
		if len(chunk) == 0 {
			return nil
		}
		ups, err := r.prepare(ctx, chunk)
		if err != nil {
			return err
		}
		for _, u := range ups {
			select {
			case out <- u:
			case <-ctx.Done():
				return nil
			}
		}
	}
}

var fileField = regexp.MustCompile(`^files\[(\d+)\]\.(\w+)$`)

// prepare asks for upload URLs for files, in calls the budget allows. A
// file the server refuses (too large, empty, of a type it does not take)
// fails alone and the rest are sent again.
func (r *run) prepare(ctx context.Context, files []*file) ([]*upload, error) {
	var out []*upload
	for len(files) > 0 {
		n := min(len(files), r.chunkSize())
		part := files[:n]
		type fileJSON struct {
			ClientFileID string `json:"clientFileId"`
			Filename     string `json:"filename"`
			ByteSize     int64  `json:"byteSize"`
		}
		in := struct {
			Files []fileJSON `json:"files"`
		}{}
		for i, f := range part {
			in.Files = append(in.Files, fileJSON{ClientFileID: strconv.Itoa(i), Filename: f.name, ByteSize: f.size})
		}
		var ans struct {
			Uploads []struct {
				ClientFileID string            `json:"clientFileId"`
				AssetID      string            `json:"assetId"`
				UploadURL    string            `json:"uploadUrl"`
				Headers      map[string]string `json:"headers"`
				ExpiresAt    time.Time         `json:"expiresAt"`
			} `json:"uploads"`
		}
		err := r.api.call(ctx, http.MethodPost, "/v1/projects/"+r.project+"/assets:prepareUpload", in, &ans)
		var ae *APIError
		switch {
		case err == nil:
			for _, u := range ans.Uploads {
				i, err := strconv.Atoi(u.ClientFileID)
				if err != nil || i < 0 || i >= len(part) {
					return out, fmt.Errorf("prepare answered an upload for unknown file %q", u.ClientFileID)
				}
				if origin, ok := originOf(u.UploadURL); !r.allowed(origin) {
					if !ok {
						origin = strconv.Quote(u.UploadURL)
					}
					r.fail(part[i], StageUpload, "upload_url_refused", fmt.Sprintf(
						"the server's upload URL leads to %s, which is neither the server nor the storage it names (%s); the file was not sent",
						origin, strings.Join(slices.Sorted(maps.Keys(r.origins)), ", ")))
					continue
				}
				// A URL this close to its end (20 s, or a quarter of a short
				// lifetime) is not worth starting on: by the server's clock it
				// may be over already.
				margin := min(20*time.Second, max(0, time.Until(u.ExpiresAt)/4))
				out = append(out, &upload{f: part[i], assetID: u.AssetID, url: u.UploadURL, headers: u.Headers,
					expires: u.ExpiresAt, margin: margin})
			}
			files = files[n:]
		case errors.As(err, &ae) && ae.Status == http.StatusTooManyRequests && ae.maxAtOnce() > 0:
			r.mu.Lock()
			r.chunk = min(r.chunk, ae.maxAtOnce())
			r.mu.Unlock()
		case errors.As(err, &ae) && (ae.Status == http.StatusBadRequest || ae.Status == http.StatusUnsupportedMediaType):
			bad := map[int]string{}
			fields, _ := ae.Details["fields"].(map[string]any)
			for k, v := range fields {
				if m := fileField.FindStringSubmatch(k); m != nil {
					i, _ := strconv.Atoi(m[1])
					bad[i] += fmt.Sprintf("%s %v. ", m[2], v)
				}
			}
			if len(bad) == 0 {
				return out, fmt.Errorf("prepare upload: %w", err)
			}
			rest := append([]*file(nil), files[n:]...)
			files = files[:0:0]
			for i, f := range part {
				if msg, ok := bad[i]; ok {
					r.fail(f, StageUpload, ae.Code, strings.TrimSpace(msg))
				} else {
					files = append(files, f)
				}
			}
			files = append(files, rest...)
		default:
			return out, fmt.Errorf("prepare upload: %w", err)
		}
	}
	return out, nil
}

// put sends u's bytes, preparing it again when its URL has expired or is
// about to. It reports whether the bytes arrived.
func (r *run) put(ctx context.Context, u *upload) bool {
	for attempt := 1; ; attempt++ {
		if err := r.api.held(ctx); err != nil {
			return false
		}
		if err := r.win.acquire(ctx); err != nil {
			return false
		}
		// Checked once the PUT may start: the wait for a slot can outlast
		// a short-lived URL.
		for u.expires.IsZero() || time.Until(u.expires) < u.margin {
			if !r.prepareAgain(ctx, u) {
				r.win.release()
				return false
			}
		}
		err := r.putOnce(ctx, u)
		r.win.release()
		if err == nil {
			r.win.success()
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		var ae *APIError
		if errors.As(err, &ae) {
			switch {
			case ae.Code == "already_finalized":
				return true
			case ae.Code == "url_expired" || ae.Status == http.StatusNotFound:
				u.expires = time.Time{} // prepare again on the next turn
				continue
			case !ae.transient():
				r.fail(u.f, StageUpload, ae.Code, ae.Message)
				return false
			}
		}
		r.win.failure()
		if attempt >= maxAttempts {
			r.failErr(u.f, fmt.Errorf("gave up after %d tries: %w", attempt, err))
			return false
		}
		var pause time.Duration
		if ae != nil && ae.Status == http.StatusTooManyRequests {
			pause = r.api.refused("PUT "+u.f.path, ae)
		} else {
			pause = backoff(attempt)
			r.report(Event{Kind: EventRetry, Path: u.f.path, Message: err.Error(), WaitSeconds: pause.Seconds()})
		}
		if wait.For(ctx, pause) != nil {
			return false
		}
	}
}

// prepareAgain replaces u's expired URL with a new one (a new asset; the
// old one is removed by the server when its URL has expired).
func (r *run) prepareAgain(ctx context.Context, u *upload) bool {
	if u.reprepare++; u.reprepare > 3 {
		r.fail(u.f, StageUpload, "url_expired", "the upload URL expired, or its asset was gone, three times before the file could be sent")
		return false
	}
	ups, err := r.prepare(ctx, []*file{u.f})
	switch {
	case err != nil:
		if ctx.Err() == nil {
			r.failErr(u.f, err)
		}
		return false
	case len(ups) == 0:
		return false // prepare failed the file itself
	}
	fresh := ups[0]
	u.assetID, u.url, u.headers, u.expires, u.margin = fresh.assetID, fresh.url, fresh.headers, fresh.expires, fresh.margin
	return true
}

// putOnce sends the file's bytes once, telling the progress of each read.
func (r *run) putOnce(ctx context.Context, u *upload) (err error) {
	f, err := os.Open(u.f.path)
	if err != nil {
		return err
	}
	defer f.Close()
	body := &counter{r: f, report: r.report}
	defer func() {
		if body.n > 0 && err != nil {
			r.report(Event{Kind: EventBytes, Bytes: -body.n})
		}
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u.url, body)
	if err != nil {
		return err
	}
	req.ContentLength = u.f.size
	// The URL's signature is the credential: the API key goes nowhere else.
	for k, v := range u.headers {
		if slices.ContainsFunc(putHeaders, func(h string) bool { return strings.EqualFold(h, k) }) {
			req.Header.Set(k, v)
		}
	}
	res, err := r.o.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	return answerError(res)
}

// counter tells how many bytes were read, as they are.
type counter struct {
	r      io.Reader
	n      int64
	report func(Event)
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.n += int64(n)
		c.report(Event{Kind: EventBytes, Bytes: int64(n)})
	}
	return n, err
}

// finalizeLoop finalizes sent files in chunks: when a chunk is full, or a
// second after the first of one arrived.
func (r *run) finalizeLoop(ctx context.Context, in <-chan *upload) error {
	var batch []*upload
	var due <-chan time.Time
	for {
		select {
		case u, ok := <-in:
			if !ok {
				return r.finalize(ctx, batch)
			}
			batch = append(batch, u)
			if due == nil {
				due = time.After(time.Second)
			}
			if len(batch) < r.chunkSize() {
				continue
			}
		case <-due:
		case <-ctx.Done():
			return nil
		}
		if err := r.finalize(ctx, batch); err != nil {
			return err
		}
		batch, due = nil, nil
	}
}

func (r *run) finalize(ctx context.Context, ups []*upload) error {
	if len(ups) == 0 {
		return nil
	}
	type item struct {
		AssetID  string `json:"assetId"`
		Checksum string `json:"checksumSha256"`
	}
	in := struct {
		Assets []item `json:"assets"`
	}{}
	byID := map[string]*upload{}
	for _, u := range ups {
		in.Assets = append(in.Assets, item{u.assetID, u.f.sum})
		byID[u.assetID] = u
	}
	var ans struct {
		BatchID *string `json:"batchId"`
		Assets  []struct {
			AssetID     string  `json:"assetId"`
			Status      string  `json:"status"`
			DuplicateOf *string `json:"duplicateOf"`
			Error       *struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		} `json:"assets"`
	}
	err := r.api.call(ctx, http.MethodPost, "/v1/projects/"+r.project+"/assets:finalizeUpload", in, &ans)
	var ae *APIError
	switch {
	case ctx.Err() != nil:
		return nil
	case errors.As(err, &ae) && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden || ae.Status == http.StatusNotFound || ae.Status == http.StatusConflict):
		return fmt.Errorf("finalize upload: %w", err)
	case err != nil:
		for _, u := range ups {
			r.failErr(u.f, err)
		}
		return nil
	}
	batch := ""
	if ans.BatchID != nil {
		batch = *ans.BatchID
	}
	var accepted []string
	for _, a := range ans.Assets {
		u := byID[a.AssetID]
		if u == nil {
			continue
		}
		switch {
		case a.Status == "uploaded":
			accepted = append(accepted, a.AssetID)
			r.mu.Lock()
			r.res.Counts.Uploaded++
			r.uploaded[a.AssetID] = u.f
			r.mu.Unlock()
			r.sidecarFor(u.f, a.AssetID)
			r.report(Event{Kind: EventUploaded, Path: u.f.path, AssetID: a.AssetID, BatchID: batch})
		case a.Status == "duplicate" && a.DuplicateOf != nil:
			r.skip(u.f, *a.DuplicateOf, "")
		case a.Error != nil:
			r.fail(u.f, StageUpload, a.Error.Code, a.Error.Message)
		default:
			r.fail(u.f, StageUpload, a.Status, "finalize answered "+a.Status)
		}
	}
	if batch != "" && len(accepted) > 0 {
		r.mu.Lock()
		r.res.Batches = append(r.res.Batches, batch)
		r.mu.Unlock()
		r.tracker.expect(batch, accepted)
	}
	return nil
}

// jobFailures names the file of every job of this run's batches that
// failed.
func (r *run) jobFailures(ctx context.Context) error {
	for _, b := range r.tracker.failedBatches() {
		var ans struct {
			Jobs []struct {
				AssetID   *string `json:"assetId"`
				Status    string  `json:"status"`
				Error     *string `json:"error"`
				ErrorCode *string `json:"errorCode"`
			} `json:"jobs"`
		}
		if err := r.api.call(ctx, http.MethodGet, "/v1/batches/"+b, nil, &ans); err != nil {
			return fmt.Errorf("batch %s: %w", b, err)
		}
		for _, j := range ans.Jobs {
			if j.Status != "failed" || j.AssetID == nil {
				continue
			}
			r.mu.Lock()
			f := r.uploaded[*j.AssetID]
			r.mu.Unlock()
			if f == nil {
				continue
			}
			code, msg := "job_failed", ""
			if j.ErrorCode != nil {
				code = *j.ErrorCode
			}
			if j.Error != nil {
				msg = *j.Error
			}
			r.fail(f, StageProcessing, code, msg)
		}
	}
	return nil
}
