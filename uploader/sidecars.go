package uploader

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"lightbox/xmp"
)

// The events of XMP sidecars, after EventUploaded and before
// EventUploadsDone.
const (
	// Path: an XMP sidecar, AssetID, Message: what the server warned of.
	EventSidecarSent EventKind = "sidecar_sent"
	// Path: an XMP sidecar not sent or not applied, AssetID when known,
	// Message: why.
	EventSidecarSkipped EventKind = "sidecar_skipped"
)

// sidecar is an XMP sidecar found beside a photo: NAME.EXT.xmp, as
// darktable and digiKam name it, or NAME.xmp, as Lightroom and Bridge do.
type sidecar struct {
	path string
	size int64
}

// sidecarSend is a sidecar to PUT to the asset its photo became.
type sidecarSend struct {
	s     *sidecar
	asset string
}

// isSidecar reports whether path names an XMP sidecar.
func isSidecar(path string) bool { return strings.EqualFold(filepath.Ext(path), ".xmp") }

// sidecarSkip is a sidecar not sent, and why.
type sidecarSkip struct{ path, why string }

// pairSidecars takes the sidecars out of ignored and gives each to its
// photo among files: NAME.EXT.xmp to NAME.EXT, NAME.xmp to every photo
// named NAME.* beside it (a raw and its JPEG) that has no NAME.EXT.xmp of
// its own. Names match in any case. It returns the rest of ignored, and
// the sidecars left without a photo or too large to send.
func pairSidecars(files []*file, ignored []string) (rest []string, skipped []sidecarSkip) {
	byDir := map[string][]*file{}
	for _, f := range files {
		d := dirOf(f.path)
		byDir[d] = append(byDir[d], f)
	}
	var loose []*sidecar // NAME.xmp, paired once every NAME.EXT.xmp is
	for _, p := range ignored {
		if !isSidecar(p) {
			rest = append(rest, p)
			continue
		}
		info, err := os.Stat(p)
		switch {
		case err != nil:
			skipped = append(skipped, sidecarSkip{p, "unreadable: " + err.Error()})
			continue
		case info.Size() > xmp.MaxPacket:
			skipped = append(skipped, sidecarSkip{p, fmt.Sprintf("larger than %d bytes", xmp.MaxPacket)})
			continue
		}
		s := &sidecar{path: p, size: info.Size()}
		stem := strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))
		paired := false
		for _, f := range byDir[dirOf(p)] {
			if strings.EqualFold(f.name, stem) {
				f.sidecar, paired = s, true
			}
		}
		if !paired {
			loose = append(loose, s)
		}
	}
	for _, s := range loose {
		stem := strings.TrimSuffix(filepath.Base(s.path), filepath.Ext(s.path))
		named, paired := false, false
		for _, f := range byDir[dirOf(s.path)] {
			if !strings.EqualFold(strings.TrimSuffix(f.name, filepath.Ext(f.name)), stem) {
				continue
			}
			named = true
			if f.sidecar == nil {
				f.sidecar, paired = s, true
			}
		}
		switch {
		case !paired && named:
			skipped = append(skipped, sidecarSkip{s.path, "its photos have sidecars named NAME.EXT.xmp"})
		case !paired:
			skipped = append(skipped, sidecarSkip{s.path, "no photo"})
		}
	}
	return rest, skipped
}

// dirOf is the folder of path, the same however path was given.
func dirOf(path string) string {
	d := filepath.Dir(path)
	if abs, err := filepath.Abs(d); err == nil {
		return abs
	}
	return d
}

// sidecarFor queues the sidecar of f, if it has one, for asset.
func (r *run) sidecarFor(f *file, asset string) {
	if f.sidecar == nil || asset == "" {
		return
	}
	r.mu.Lock()
	r.sidecars = append(r.sidecars, sidecarSend{f.sidecar, asset})
	r.mu.Unlock()
}

// skipSidecar reports a sidecar that was not sent, or not applied.
func (r *run) skipSidecar(path, asset, why string) {
	r.mu.Lock()
	r.res.Counts.SidecarsSkipped++
	r.res.SidecarsSkipped = append(r.res.SidecarsSkipped, Failure{Path: Clean(path), Stage: StageSidecar, Message: Clean(why)})
	r.mu.Unlock()
	r.report(Event{Kind: EventSidecarSkipped, Path: path, AssetID: asset, Message: why})
}

// sendSidecars PUTs each queued sidecar to its asset, once the photos are
// uploaded; the server applies a sidecar whether the asset's ingest has
// run or not. A sidecar that fails is reported, and fails nothing else.
func (r *run) sendSidecars(ctx context.Context) {
	r.mu.Lock()
	queued := r.sidecars
	r.sidecars = nil
	r.mu.Unlock()
	for _, q := range queued {
		if ctx.Err() != nil {
			return
		}
		body, err := os.ReadFile(q.s.path)
		switch {
		case err != nil:
			r.skipSidecar(q.s.path, q.asset, "unreadable: "+err.Error())
			continue
		case len(body) > xmp.MaxPacket:
			r.skipSidecar(q.s.path, q.asset, fmt.Sprintf("larger than %d bytes", xmp.MaxPacket))
			continue
		}
		var ans struct {
			Applied  bool     `json:"applied"`
			Warnings []string `json:"warnings"`
		}
		err = r.api.send(ctx, http.MethodPut, "/v1/assets/"+q.asset+"/sidecar", "application/rdf+xml", body, &ans)
		switch {
		case err != nil:
			r.skipSidecar(q.s.path, q.asset, err.Error())
		case !ans.Applied:
			r.skipSidecar(q.s.path, q.asset, "refused: "+strings.Join(ans.Warnings, "; "))
		default:
			r.mu.Lock()
			r.res.Counts.SidecarsSent++
			r.mu.Unlock()
			r.report(Event{Kind: EventSidecarSent, Path: q.s.path, AssetID: q.asset, Message: strings.Join(ans.Warnings, "; ")})
		}
	}
}
