package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"lightbox/store"
	"lightbox/uploader"
)

// parseUpload reads `upload [--project ID | --new TITLE] [--concurrency N]
// [--json] [--url URL] [--api-key KEY] PATH...`. Flags may come before or
// after the paths; everything after "--" is a path.
func parseUpload(fs *flag.FlagSet, args []string, getenv func(string) string) (command, error) {
	var o uploader.Options
	fs.StringVar(&o.ProjectID, "project", "", "the project's id")
	fs.StringVar(&o.NewTitle, "new", "", "a project's title: the one with this title, made if there is none")
	fs.IntVar(&o.Concurrency, "concurrency", 4, "uploads in flight to start with")
	asJSON := fs.Bool("json", false, "print one JSON object a line instead of progress bars")
	fs.StringVar(&o.URL, "url", getenv("LIGHTBOX_URL"), "the server's URL (LIGHTBOX_URL)")
	fs.StringVar(&o.APIKey, "api-key", getenv("LIGHTBOX_API_KEY"), "an API key (LIGHTBOX_API_KEY)")
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return command{}, err
			}
			return command{}, fmt.Errorf("upload: %w", err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			o.Paths = append(o.Paths, rest...)
			break
		}
		o.Paths, args = append(o.Paths, rest[0]), rest[1:]
	}
	switch {
	case len(o.Paths) == 0:
		return command{}, errors.New("upload: no files or folders given")
	case (o.ProjectID == "") == (o.NewTitle == ""):
		return command{}, errors.New("upload: give exactly one of --project ID and --new TITLE")
	case o.ProjectID != "" && uuid.Validate(o.ProjectID) != nil:
		return command{}, fmt.Errorf("upload: --project %q is not a project id", o.ProjectID)
	case o.NewTitle != "" && strings.TrimSpace(o.NewTitle) == "":
		return command{}, errors.New("upload: --new needs a title")
	case o.Concurrency < 1 || o.Concurrency > 64:
		return command{}, errors.New("upload: --concurrency must be 1 to 64")
	case o.URL == "":
		return command{}, errors.New("upload: LIGHTBOX_URL is not set (or give --url)")
	case !strings.HasPrefix(o.URL, "http://") && !strings.HasPrefix(o.URL, "https://"):
		return command{}, fmt.Errorf("upload: %q is not an http:// or https:// URL", o.URL)
	case o.APIKey == "":
		return command{}, errors.New("upload: LIGHTBOX_API_KEY is not set (or give --api-key)")
	}
	return command{run: func(ctx context.Context, _ *store.Store, stdout, stderr io.Writer) error {
		return upload(ctx, o, *asJSON, stdout, stderr)
	}}, nil
}

// upload runs the upload with progress bars on stderr, or JSON lines on
// stdout, and fails naming every file that did not make it.
func upload(ctx context.Context, o uploader.Options, asJSON bool, stdout, stderr io.Writer) error {
	if asJSON {
		enc := json.NewEncoder(stdout)
		o.Report = func(ev uploader.Event) {
			if ev.Kind != uploader.EventBytes {
				_ = enc.Encode(ev)
			}
		}
	} else {
		o.Report = newBars(stderr).report
	}
	res, err := uploader.Run(ctx, o)
	if ctx.Err() != nil {
		return errors.New("interrupted; run the same command again to send the rest")
	}
	if err != nil {
		// Its text may hold a server's words: shown without controls.
		return errors.New(uploader.Clean(err.Error()))
	}
	if len(res.Failures) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d files failed:", len(res.Failures), res.Counts.Files)
	for _, f := range res.Failures {
		fmt.Fprintf(&b, "\n  %s: %s failed: %s: %s", f.Path, f.Stage, f.Code, f.Message)
	}
	return errors.New(uploader.Clean(b.String()))
}

// bars draws the upload's progress on a terminal: bytes, files, rate and
// time left while uploading, then the server's processing. Elsewhere it
// prints only what happened to whole files.
type bars struct {
	w           io.Writer
	tty         bool
	up, work    *progressbar.ProgressBar
	files, done int
	// sidecarsSkipped name each XMP sidecar not sent, with why.
	sidecarsSkipped []string
}

func newBars(w io.Writer) *bars {
	f, ok := w.(*os.File)
	return &bars{w: w, tty: ok && term.IsTerminal(int(f.Fd()))}
}

// say prints a line above the bars.
func (b *bars) say(format string, args ...any) {
	for _, bar := range []*progressbar.ProgressBar{b.up, b.work} {
		if bar != nil {
			_ = bar.Clear()
		}
	}
	fmt.Fprintf(b.w, format+"\n", args...)
}

func (b *bars) describe() {
	if b.up != nil {
		b.up.Describe(fmt.Sprintf("uploading %d/%d files", b.done, b.files))
	}
}

func (b *bars) report(ev uploader.Event) {
	switch ev.Kind {
	case uploader.EventScanned:
		c := ev.Counts
		b.files = c.Files
		b.say("%d files found (%s), %d of other types ignored", c.Files, humanBytes(c.Bytes), c.Ignored)
		if b.tty && c.Bytes > 0 {
			b.up = progressbar.NewOptions64(c.Bytes, progressbar.OptionSetWriter(b.w), progressbar.OptionShowBytes(true),
				progressbar.OptionSetPredictTime(true), progressbar.OptionSetWidth(30), progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionSetRenderBlankState(true))
			b.describe()
		}
	case uploader.EventProject:
		verb := "into"
		if ev.Code == "created" {
			verb = "into the new"
		}
		b.say("uploading %s project %q (%s)", verb, ev.Message, ev.ProjectID)
	case uploader.EventBytes:
		if b.up != nil {
			_ = b.up.Add64(ev.Bytes)
		}
	case uploader.EventSkipped, uploader.EventFailed:
		if ev.Kind == uploader.EventFailed {
			b.say("%s: %s failed: %s: %s", ev.Path, ev.Stage, ev.Code, ev.Message)
		}
		if ev.Stage == uploader.StageProcessing {
			return
		}
		b.files--
		if b.up != nil {
			if st, err := os.Stat(ev.Path); err == nil && b.up.GetMax64() > st.Size() {
				b.up.ChangeMax64(b.up.GetMax64() - st.Size())
			}
		}
		b.describe()
	case uploader.EventUploaded:
		b.done++
		b.describe()
	case uploader.EventSidecarSent:
		if ev.Message != "" {
			b.say("%s: sidecar applied, but: %s", ev.Path, ev.Message)
		}
	case uploader.EventSidecarSkipped:
		b.sidecarsSkipped = append(b.sidecarsSkipped, filepath.Base(ev.Path)+": "+ev.Message)
		b.say("%s: sidecar skipped: %s", ev.Path, ev.Message)
	case uploader.EventRetry:
		b.say("retrying in %.0f s: %s", ev.WaitSeconds, ev.Message)
	case uploader.EventRateLimited:
		if b.up != nil {
			b.up.Describe(fmt.Sprintf("uploading %d/%d files (rate limited: waiting %.0f s)", b.done, b.files, ev.WaitSeconds))
		}
	case uploader.EventUploadsDone:
		c := ev.Counts
		if c.Uploaded == 0 && b.up != nil {
			// Nothing was sent: a full bar would say otherwise.
			_ = b.up.Exit()
			b.up = nil
		}
		b.finish(b.up, "uploaded %d, skipped %d already held, %d failed", c.Uploaded, c.Skipped, c.UploadFailed)
		if c.SidecarsSent+c.SidecarsSkipped > 0 {
			line := fmt.Sprintf("sidecars: %d sent, %d skipped", c.SidecarsSent, c.SidecarsSkipped)
			if len(b.sidecarsSkipped) > 0 {
				line += " (" + strings.Join(b.sidecarsSkipped, "; ") + ")"
			}
			fmt.Fprintln(b.w, line)
		}
	case uploader.EventProcessing:
		c := ev.Counts
		if b.tty && b.work == nil && c.Jobs > 0 {
			b.work = progressbar.NewOptions(c.Jobs, progressbar.OptionSetWriter(b.w), progressbar.OptionShowCount(),
				progressbar.OptionSetWidth(30), progressbar.OptionSetRenderBlankState(true))
		}
		if b.work != nil {
			b.work.Describe(fmt.Sprintf("processing (%d failed, %d searchable)", c.JobsFailed, c.Searchable))
			_ = b.work.Set(c.Processed + c.JobsFailed)
		}
	case uploader.EventDone:
		c := ev.Counts
		b.finish(b.work, "processed %d, %d failed, %d searchable so far", c.Processed, c.JobsFailed, c.Searchable)
	}
}

// finish leaves a full bar on its own line and sums up below it.
func (b *bars) finish(bar *progressbar.ProgressBar, format string, args ...any) {
	if bar != nil {
		_ = bar.Finish()
		fmt.Fprintln(b.w)
	}
	fmt.Fprintf(b.w, format+"\n", args...)
}

func humanBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}
