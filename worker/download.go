package worker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/hibiken/asynq"

	"lightbox/blob"
	"lightbox/imaging/formats"
	"lightbox/netguard"
	"lightbox/store"
	"lightbox/tasks"
)

// Download limits.
const (
	downloadTimeout = 2 * time.Minute
	maxRedirects    = 5
)

var errRedirectRefused = errors.New("redirect refused")

// safeClient fetches only public addresses, plus the networks in allow. The
// check runs on the address actually dialled, after DNS, for every
// connection, redirects included, so a name that resolves (or re-resolves)
// to a private address is refused too.
func safeClient(allow []netip.Prefix) *http.Client {
	return &http.Client{
		Transport: guardedTransport(allow, 30*time.Second),
		Timeout:   downloadTimeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("%w: more than %d redirects", errRedirectRefused, maxRedirects)
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("%w: to %s, and only http and https are fetched", errRedirectRefused, req.URL.Scheme)
			}
			return nil
		},
	}
}

// guardedTransport dials only addresses netguard allows (public ones plus
// allow), never through a proxy, which would dial for it and skip the check.
func guardedTransport(allow []netip.Prefix, headerTimeout time.Duration) *http.Transport {
	dialer := &net.Dialer{
		Timeout: 10 * time.Second,
		Control: netguard.Guard{Allow: allow}.Control,
	}
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: headerTimeout,
		MaxIdleConnsPerHost:   4,
	}
}

func init() { handle(tasks.TypeDownload, (*Worker).download) }

// download fetches a URL into a new asset's original, then finalizes it like
// an upload (duplicates included) and queues its ingest in the same batch.
func (w *Worker) download(ctx context.Context, t *asynq.Task) error {
	p, err := tasks.Decode[tasks.DownloadPayload](t)
	if err != nil {
		return err
	}
	a, err := w.asset(ctx, p.AssetID)
	if err != nil {
		return err
	}
	if a.Status != store.AssetPendingUpload {
		return nil // a repeated run: the first one got it
	}
	u, err := url.Parse(p.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return badInput("invalid_url", "Only http and https URLs are fetched.")
	}
	res, err := w.limiter.Allow(ctx, "download:"+u.Hostname(), redis_rate.PerMinute(w.cfg.DownloadPerHost))
	if err != nil {
		w.log.Warn("download limiter unavailable; fetch allowed", "err", err)
	} else if res.Allowed == 0 {
		return tasks.RateLimited("downloads from "+u.Hostname(), res.RetryAfter)
	}

	owner, err := w.st.ProjectOwner(ctx, a.ProjectID)
	if err != nil {
		return err
	}
	info, contentType, err := w.fetch(ctx, p.URL, a.BlobKey)
	if err != nil {
		return err
	}
	quota := store.Limits{Bytes: w.cfg.QuotaBytes}
	var over *store.QuotaError
	if err := w.st.RecordDownload(ctx, owner, a.ID, info.SHA256, info.Size, contentType, quota); errors.As(err, &over) {
		if err := w.blobs.Delete(ctx, a.BlobKey); err != nil && !errors.Is(err, blob.ErrNotFound) {
			return err
		}
		return badInput("quota_exceeded", "This photo needs %d bytes; %d of the %d bytes this account may hold are used or on their way.",
			over.Requested, over.Used, over.Limit)
	} else if err != nil {
		return err
	}
	job, err := w.st.JobByID(ctx, p.JobID)
	if err != nil {
		return err
	}
	_, err = w.app.Finalize(ctx, w.log, owner, a.ProjectID, []store.FinalizeItem{{AssetID: a.ID, Checksum: info.SHA256}}, job.BatchID)
	return err
}

// fetch streams the URL's body into key, refusing what is not an image we
// take or is larger than the upload limit.
func (w *Worker) fetch(ctx context.Context, rawURL, key string) (blob.Info, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return blob.Info{}, "", badInput("invalid_url", "The URL is not valid.")
	}
	req.Header.Set("Accept", "image/*")
	resp, err := w.fetcher.Do(req)
	if errors.Is(err, netguard.ErrForbidden) {
		return blob.Info{}, "", badInput("forbidden_address", "The URL leads to a private or local address, which imports may not reach.")
	}
	if errors.Is(err, errRedirectRefused) {
		return blob.Info{}, "", badInput("redirect_refused", "%v", err)
	}
	if err != nil {
		return blob.Info{}, "", err // network trouble: worth a retry
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		wait, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return blob.Info{}, "", tasks.RateLimited("downloads", time.Duration(max(wait, 1))*time.Second)
	case resp.StatusCode >= 500:
		return blob.Info{}, "", fmt.Errorf("the server answered %s", resp.Status)
	case resp.StatusCode != http.StatusOK:
		return blob.Info{}, "", badInput("download_failed", "The server answered %s.", resp.Status)
	}
	if resp.ContentLength > w.cfg.MaxUploadBytes {
		return blob.Info{}, "", badInput("too_large", "The file is %d bytes; the limit is %d.", resp.ContentLength, w.cfg.MaxUploadBytes)
	}
	// A few KiB reach a TIFF-shaped raw's first directory, which tells it
	// from a plain TIFF.
	body := bufio.NewReaderSize(resp.Body, 8<<10)
	head, err := body.Peek(8 << 10)
	if err != nil && !errors.Is(err, io.EOF) {
		// The body broke off (or never came) before its first bytes
		// could be read: network trouble, not a file we cannot read.
		return blob.Info{}, "", fmt.Errorf("reading the body: %w", err)
	}
	f := formats.Sniff(head)
	if f == "" {
		return blob.Info{}, "", badInput("unsupported_format", "The URL does not serve an image in a format Lightbox reads: %s.", formats.Names)
	}
	contentType := f.ContentType()
	info, err := w.blobs.Put(ctx, key, body, w.cfg.MaxUploadBytes)
	if errors.Is(err, blob.ErrTooLarge) {
		return blob.Info{}, "", badInput("too_large", "The file is larger than %d bytes.", w.cfg.MaxUploadBytes)
	}
	return info, contentType, err
}
