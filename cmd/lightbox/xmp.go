package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"lightbox/retryafter"
	"lightbox/store"
	"lightbox/uploader"
	"lightbox/wait"
	"lightbox/xmp"
)

// xmpOptions are the settings of `xmp write` and `xmp read`.
type xmpOptions struct {
	project, naming, pick string
	url, apiKey           string
	dir                   string
	embed, dryRun         bool
}

// parseXMP reads `xmp write|read --project ID [--naming adobe|darktable]
// [--pick P] [--embed] [--dry-run] [--url URL] [--api-key KEY] DIR`; the
// folder may come before or after the flags. read takes neither --embed
// nor --dry-run.
func parseXMP(fs *flag.FlagSet, args []string, getenv func(string) string) (command, error) {
	write := fs.Name() == "xmp write"
	var o xmpOptions
	fs.StringVar(&o.project, "project", "", "the project's id")
	fs.StringVar(&o.naming, "naming", "adobe", "sidecar names: adobe (NAME.xmp) or darktable (NAME.EXT.xmp)")
	fs.StringVar(&o.pick, "pick", "none", "how a pick is written: none, rating:N or label:COLOUR")
	fs.StringVar(&o.url, "url", getenv("LIGHTBOX_URL"), "the server's URL (LIGHTBOX_URL)")
	fs.StringVar(&o.apiKey, "api-key", getenv("LIGHTBOX_API_KEY"), "an API key (LIGHTBOX_API_KEY)")
	if write {
		fs.BoolVar(&o.embed, "embed", false, "write the packet into JPEG, TIFF and DNG files instead of a sidecar")
		fs.BoolVar(&o.dryRun, "dry-run", false, "print what would be written and write nothing")
	}
	var dirs []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return command{}, err
			}
			return command{}, fmt.Errorf("%s: %w", fs.Name(), err)
		}
		if fs.NArg() == 0 {
			break
		}
		dirs, args = append(dirs, fs.Arg(0)), fs.Args()[1:]
	}
	name := fs.Name()
	switch {
	case len(dirs) == 0:
		return command{}, fmt.Errorf("%s: no folder given", name)
	case len(dirs) > 1:
		return command{}, fmt.Errorf("%s: unexpected argument %q: give one folder", name, dirs[1])
	case o.project == "":
		return command{}, fmt.Errorf("%s: --project is required", name)
	case uuid.Validate(o.project) != nil:
		return command{}, fmt.Errorf("%s: --project %q is not a project id", name, o.project)
	case o.naming != "adobe" && o.naming != "darktable":
		return command{}, fmt.Errorf("%s: --naming must be adobe or darktable", name)
	case o.url == "":
		return command{}, fmt.Errorf("%s: LIGHTBOX_URL is not set (or give --url)", name)
	case !strings.HasPrefix(o.url, "http://") && !strings.HasPrefix(o.url, "https://"):
		return command{}, fmt.Errorf("%s: %q is not an http:// or https:// URL", name, o.url)
	case o.apiKey == "":
		return command{}, fmt.Errorf("%s: LIGHTBOX_API_KEY is not set (or give --api-key)", name)
	}
	if err := xmp.ParsePick(o.pick); err != nil {
		return command{}, fmt.Errorf("%s: --%w", name, err)
	}
	o.dir = dirs[0]
	return command{run: func(ctx context.Context, _ *store.Store, stdout, stderr io.Writer) error {
		api := &apiClient{base: strings.TrimRight(o.url, "/"), key: o.apiKey, http: http.DefaultClient}
		assets, err := api.projectAssets(ctx, o.project)
		if err != nil {
			return err
		}
		if write {
			return xmpWrite(ctx, o, assets, stdout, stderr)
		}
		return xmpRead(ctx, api, o, assets, stdout, stderr)
	}}, nil
}

// ---- The API ----

// apiClient calls the API with the key, retrying what passes (network
// errors, 5xx, 429 after its Retry-After) a few times.
type apiClient struct {
	base, key string
	http      *http.Client
}

const apiAttempts = 6

func (c *apiClient) call(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	// One key across retries: a POST whose answer was lost is done once.
	idem := uuid.NewString()
	for attempt := 1; ; attempt++ {
		pause, err := c.once(ctx, method, path, body, idem, out)
		if err == nil || pause < 0 || attempt == apiAttempts || ctx.Err() != nil {
			if err != nil {
				return fmt.Errorf("%s %s: %s", method, path, uploader.Clean(err.Error()))
			}
			return nil
		}
		if pause == 0 {
			d := 250 * time.Millisecond << attempt
			pause = d/2 + rand.N(d/2)
		}
		if err := wait.For(ctx, pause); err != nil {
			return err
		}
	}
}

// once sends one request. pause is negative when asking again cannot
// help, else the wait the server asked for (0: back off).
func (c *apiClient) once(ctx context.Context, method, path string, body []byte, idem string, out any) (pause time.Duration, err error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return -1, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if method == http.MethodPost {
		req.Header.Set("Idempotency-Key", idem)
	}
	res, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return 0, err
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		e := &uploader.APIError{Status: res.StatusCode}
		b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		if json.Unmarshal(b, e) != nil || e.Code == "" {
			e.Code = strings.ToLower(strings.ReplaceAll(http.StatusText(res.StatusCode), " ", "_"))
		}
		switch {
		case res.StatusCode == http.StatusTooManyRequests:
			return max(retryafter.Parse(res.Header.Get("Retry-After"), time.Now()), time.Second), e
		case res.StatusCode >= 500:
			return 0, e
		}
		return -1, e
	}
	if out == nil {
		return 0, nil
	}
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		return -1, fmt.Errorf("reading the answer: %w", err)
	}
	return 0, nil
}

// remoteAsset is what the asset list says of a photo, as far as the cull
// in a sidecar goes.
type remoteAsset struct {
	ID       string  `json:"id"`
	Filename string  `json:"filename"`
	ByteSize int64   `json:"byteSize"`
	Checksum *string `json:"checksumSha256"`
	Flags    struct {
		Status string `json:"status"`
	} `json:"flags"`
	Keywords  []string        `json:"keywords"`
	IPTC      json.RawMessage `json:"iptc"`
	MyRating  *remoteRating   `json:"myRating"`
	UpdatedAt time.Time       `json:"updatedAt"`
	// PairAssetID is the other half of a RAW+JPEG pair.
	PairAssetID *string `json:"pairAssetId"`
}

// pairs reports whether a and b are the two halves of a RAW+JPEG pair.
func (a *remoteAsset) pairs(b *remoteAsset) bool {
	return a.PairAssetID != nil && *a.PairAssetID == b.ID
}

// remoteRating is the key owner's own rating of an asset.
type remoteRating struct {
	Rating     *int      `json:"rating"`
	Picked     bool      `json:"picked"`
	Rejected   bool      `json:"rejected"`
	ColorLabel *string   `json:"colorLabel"`
	UpdatedAt  time.Time `json:"updatedAt"`
}

// decisions is the asset's cull as an XMP packet holds it.
func (a *remoteAsset) decisions() xmp.Decisions {
	d := xmp.Decisions{Keywords: slices.Clone(a.Keywords)}
	if len(a.IPTC) > 0 {
		// Its names are the API's; a field it does not know is dropped.
		_ = json.Unmarshal(a.IPTC, &d.IPTC)
	}
	if r := a.MyRating; r != nil {
		d.Rejected, d.Picked = r.Rejected, r.Picked
		if r.Rating != nil {
			d.Rating = *r.Rating
		}
		if r.ColorLabel != nil {
			d.ColorLabel = *r.ColorLabel
		}
	}
	return d
}

// projectAssets lists the project's assets whose bytes it holds: the ones
// a file in the folder can be.
func (c *apiClient) projectAssets(ctx context.Context, project string) ([]*remoteAsset, error) {
	var out []*remoteAsset
	cursor := ""
	for {
		var page struct {
			Items    []*remoteAsset `json:"items"`
			PageInfo struct {
				NextCursor *string `json:"nextCursor"`
			} `json:"pageInfo"`
		}
		q := url.Values{"limit": {"500"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		if err := c.call(ctx, http.MethodGet, "/v1/projects/"+url.PathEscape(project)+"/assets?"+q.Encode(), nil, &page); err != nil {
			return nil, fmt.Errorf("list the project's assets: %w", err)
		}
		for _, a := range page.Items {
			switch a.Flags.Status {
			case store.AssetPendingUpload, store.AssetFailed, store.AssetDuplicate:
				// No bytes of its own to match, or the original holds them.
			default:
				if a.Checksum != nil {
					out = append(out, a)
				}
			}
		}
		if page.PageInfo.NextCursor == nil || *page.PageInfo.NextCursor == "" {
			return out, nil
		}
		cursor = *page.PageInfo.NextCursor
	}
}

// ---- Matching files to assets ----

// match is a file of the folder that holds an asset's bytes.
type match struct {
	path  string
	asset *remoteAsset
	// data is the file's bytes when matchFiles was asked to keep them.
	data []byte
}

// candidate is a file whose name and size are some assets'.
type candidate struct {
	path   string
	assets []*remoteAsset
}

// matchKey names a photo before its bytes are read: its name, in any
// case (a card read on one system and copied on another changes it), and
// its size.
func matchKey(name string, size int64) string {
	return fmt.Sprintf("%d/%s", size, strings.ToLower(name))
}

// findCandidates walks dir for the files whose name and size are some
// assets', in path order.
func findCandidates(dir string, assets []*remoteAsset) ([]*candidate, error) {
	byKey := map[string][]*remoteAsset{}
	for _, a := range assets {
		k := matchKey(a.Filename, a.ByteSize)
		byKey[k] = append(byKey[k], a)
	}
	var cands []*candidate
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if path != dir && strings.HasPrefix(e.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !e.Type().IsRegular() || strings.EqualFold(filepath.Ext(e.Name()), ".xmp") {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		if as := byKey[matchKey(e.Name(), info.Size())]; len(as) > 0 {
			cands = append(cands, &candidate{path: path, assets: as})
		}
		return nil
	})
	return cands, err
}

// confirm hashes the candidates and calls found, from any goroutine, with
// the index and match of each whose SHA-256 is one of its assets'. The
// hashing, the whole cost, runs on GOMAXPROCS workers, each file read
// once; the matches of the files keep names hold their bytes.
func confirm(ctx context.Context, cands []*candidate, keep func(path string) bool, found func(i int, m match)) error {
	jobs := make(chan int)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1<<20)
			for i := range jobs {
				c := cands[i]
				sum, data, err := hashFile(c.path, buf, keep != nil && keep(c.path))
				if err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
					continue
				}
				for _, a := range c.assets {
					if strings.EqualFold(*a.Checksum, sum) {
						found(i, match{path: c.path, asset: a, data: data})
						break
					}
				}
			}
		}()
	}
	for i := range cands {
		if ctx.Err() != nil {
			break
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return cmpErr(ctx.Err(), firstErr)
}

// matchFiles is the folder's files that hold the assets' bytes (a file is
// an asset's when its name and size are the asset's and then its SHA-256
// is), in path order.
func matchFiles(ctx context.Context, dir string, assets []*remoteAsset) ([]match, error) {
	cands, err := findCandidates(dir, assets)
	if err != nil {
		return nil, err
	}
	found := make([]*match, len(cands))
	if err := confirm(ctx, cands, nil, func(i int, m match) { found[i] = &m }); err != nil {
		return nil, err
	}
	var out []match
	for _, m := range found {
		if m != nil {
			out = append(out, *m)
		}
	}
	return out, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// hashFile is the hex SHA-256 of the file at path, read through buf, and
// its bytes when whole is set.
func hashFile(path string, buf []byte, whole bool) (string, []byte, error) {
	if whole {
		data, err := os.ReadFile(path)
		if err != nil {
			return "", nil, err
		}
		sum := sha256.Sum256(data)
		return hex.EncodeToString(sum[:]), data, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyBuffer(h, f, buf); err != nil {
		return "", nil, err
	}
	return hex.EncodeToString(h.Sum(nil)), nil, nil
}

// notFound is the names of the assets no match holds.
func notFound(assets []*remoteAsset, matches []match) []string {
	seen := map[*remoteAsset]bool{}
	for _, m := range matches {
		seen[m.asset] = true
	}
	var names []string
	for _, a := range assets {
		if !seen[a] {
			names = append(names, a.Filename)
		}
	}
	sort.Strings(names)
	return names
}

// someNames is the first few of names, for a summary line.
func someNames(names []string) string {
	const few = 5
	if len(names) <= few {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:few], ", ") + fmt.Sprintf(" and %d more", len(names)-few)
}

// sidecarPath is the sidecar of the photo at path: NAME.xmp as Adobe's
// applications and Capture One name it, or NAME.EXT.xmp as darktable and
// digiKam do.
func sidecarPath(path, naming string) string {
	if naming == "darktable" {
		return path + ".xmp"
	}
	return strings.TrimSuffix(path, filepath.Ext(path)) + ".xmp"
}

// embedder is the packet writer of a photo's format, or nil when the
// packet cannot go inside it.
func embedder(path string) func(photo, packet []byte) ([]byte, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jpg", ".jpeg":
		return xmp.EmbedJPEG
	case ".tif", ".tiff", ".dng":
		return xmp.EmbedTIFF
	}
	return nil
}

// embeddedPacket is the XMP packet inside a photo's bytes, or nil. A JPEG's
// APP1 segment and a TIFF's tag 700 both hold it whole, so looking for its
// wrapper finds it in either.
func embeddedPacket(photo []byte) []byte {
	start := bytes.Index(photo, []byte("<x:xmpmeta"))
	if start < 0 {
		return nil
	}
	end := bytes.Index(photo[start:], []byte("</x:xmpmeta>"))
	if end < 0 || end > xmp.MaxPacket {
		return nil
	}
	return photo[start : start+end+len("</x:xmpmeta>")]
}

// writeAtomically replaces path with data: a temporary file in the same
// folder, synced, then renamed over it, so an editor reading the folder
// sees the old file or the new one, never half of one. The caller syncs
// the folder.
func writeAtomically(path string, data []byte) error {
	mode := fs.FileMode(0o644)
	if info, err := os.Stat(path); err == nil {
		mode = info.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	done = true
	return nil
}

// ---- xmp write ----

// writeOutcome is what writing one photo's packet did.
type writeOutcome int

const (
	outcomeWritten writeOutcome = iota
	outcomeUnchanged
	outcomeFailed
)

// writeResult is one photo's packet, written or not.
type writeResult struct {
	path, target string
	outcome      writeOutcome
	note         string
}

// writeTally counts a write run.
type writeTally struct {
	matched, written, unchanged, failed int
	missing                             []string
	dryRun                              bool
}

func (t writeTally) String() string {
	written := "written"
	if t.dryRun {
		written = "would write"
	}
	s := fmt.Sprintf("matched %d, %s %d, unchanged %d, not found %d", t.matched, written, t.written, t.unchanged, len(t.missing))
	if len(t.missing) > 0 {
		s += " (" + someNames(t.missing) + ")"
	}
	if t.failed > 0 {
		s += fmt.Sprintf(", failed %d", t.failed)
	}
	return s
}

func xmpWrite(ctx context.Context, o xmpOptions, assets []*remoteAsset, stdout, stderr io.Writer) error {
	results, tally, err := writePackets(ctx, o, assets)
	if err != nil {
		return err
	}
	for _, r := range results {
		switch {
		case r.outcome == outcomeFailed:
			fmt.Fprintf(stderr, "%s: %s\n", r.path, r.note)
		case r.outcome == outcomeWritten && o.dryRun:
			fmt.Fprintf(stdout, "would write %s%s\n", r.target, r.note)
		case r.outcome == outcomeWritten:
			fmt.Fprintf(stdout, "wrote %s%s\n", r.target, r.note)
		}
	}
	fmt.Fprintln(stdout, tally)
	if tally.failed > 0 {
		return fmt.Errorf("%d of %d packets not written", tally.failed, tally.matched)
	}
	return nil
}

// writers is how many packets are written at once: writing is mostly
// waiting for fsync, so more than the hashing's CPUs, and it overlaps the
// hashing of the files still to match.
const writers = 16

// writePackets matches the folder's files to the assets and writes each
// match's packet as soon as it is confirmed, unless o.dryRun. The results
// are in path order.
func writePackets(ctx context.Context, o xmpOptions, assets []*remoteAsset) ([]writeResult, writeTally, error) {
	var keep func(string) bool
	if o.embed {
		keep = func(path string) bool { return embedder(path) != nil }
	}
	cands, err := findCandidates(o.dir, assets)
	if err != nil {
		return nil, writeTally{}, err
	}
	targetOf := func(path string) (string, bool) {
		if o.embed && embedder(path) != nil {
			return path, true
		}
		return sidecarPath(path, o.naming), false
	}
	// RAW+JPEG pairs share NAME.xmp: such sidecars wait for every match, so
	// the first photo by path gets it whichever is hashed first.
	sharing := map[string]int{}
	for _, c := range cands {
		t, _ := targetOf(c.path)
		sharing[t]++
	}

	results := make([]*writeResult, len(cands))
	matches := make([]*match, len(cands))
	todo := make(chan int, len(cands))
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range todo {
				target, embed := targetOf(matches[i].path)
				r := writeOne(o, *matches[i], target, embed)
				results[i] = &r
			}
		}()
	}
	var held []int
	var mu sync.Mutex
	err = confirm(ctx, cands, keep, func(i int, m match) {
		matches[i] = &m
		if t, _ := targetOf(m.path); sharing[t] > 1 {
			mu.Lock()
			held = append(held, i)
			mu.Unlock()
			return
		}
		todo <- i
	})
	if err == nil {
		slices.Sort(held)
		claimed := map[string]*match{} // sidecar → the photo it is written for
		for _, i := range held {
			t, _ := targetOf(matches[i].path)
			other, ok := claimed[t]
			switch {
			case ok && other.asset.pairs(matches[i].asset):
				// A RAW+JPEG pair holds one decision: the sidecar written
				// for one half is the other's too.
				results[i] = &writeResult{path: matches[i].path, target: t, outcome: outcomeUnchanged}
			case ok:
				results[i] = &writeResult{path: matches[i].path, target: t, outcome: outcomeFailed,
					note: fmt.Sprintf("its sidecar %s is %s's too; use --naming darktable", filepath.Base(t), filepath.Base(other.path))}
			default:
				claimed[t] = matches[i]
				todo <- i
			}
		}
	}
	close(todo)
	wg.Wait()
	if err != nil {
		return nil, writeTally{}, err
	}

	var found []match
	var out []writeResult
	dirs := map[string]bool{}
	tally := writeTally{dryRun: o.dryRun}
	for i, m := range matches {
		if m == nil {
			continue
		}
		found = append(found, *m)
		r := *results[i]
		out = append(out, r)
		switch r.outcome {
		case outcomeWritten:
			tally.written++
			dirs[filepath.Dir(r.target)] = true
		case outcomeUnchanged:
			tally.unchanged++
		case outcomeFailed:
			tally.failed++
		}
	}
	tally.matched, tally.missing = len(found), notFound(assets, found)
	if !o.dryRun {
		// The renames survive a crash once their folders are synced.
		for d := range dirs {
			if f, err := os.Open(d); err == nil {
				_ = f.Sync()
				f.Close()
			}
		}
	}
	return out, tally, nil
}

// writeOne writes the packet of one match into target: a sidecar, or the
// photo itself when embed.
func writeOne(o xmpOptions, m match, target string, embed bool) writeResult {
	r, photo := writeResult{path: m.path, target: target}, m.data
	fail := func(format string, args ...any) writeResult {
		r.outcome, r.note = outcomeFailed, fmt.Sprintf(format, args...)
		return r
	}
	var existing []byte
	if embed {
		existing = embeddedPacket(photo)
	} else {
		b, err := os.ReadFile(target)
		switch {
		case err == nil:
			existing = b
		case !errors.Is(err, fs.ErrNotExist):
			return fail("%v", err)
		}
	}
	d := m.asset.decisions()
	packet, err := xmp.Write(existing, d, xmp.WriteOptions{Pick: o.pick})
	if err != nil {
		// A sidecar Lightbox cannot read is the photographer's: left alone.
		return fail("%s: %v", filepath.Base(target), err)
	}
	if existing != nil && sameDecisions(existing, packet) {
		r.outcome = outcomeUnchanged
		return r
	}
	if o.embed && !embed {
		r.note = " (" + strings.ToUpper(strings.TrimPrefix(filepath.Ext(m.path), ".")) + " holds no packet Lightbox writes: a sidecar instead)"
	}
	if o.dryRun {
		r.note = ": " + describe(d) + r.note
		return r
	}
	out := packet
	if embed {
		if out, err = embedder(m.path)(photo, packet); err != nil {
			return fail("%v", err)
		}
	}
	if err := writeAtomically(target, out); err != nil {
		return fail("%v", err)
	}
	return r
}

// sameDecisions says whether two packets read back as the same cull.
func sameDecisions(a, b []byte) bool {
	da, _, errA := xmp.Read(a)
	db, _, errB := xmp.Read(b)
	return errA == nil && errB == nil && equalDecisions(da, db)
}

func equalDecisions(a, b xmp.Decisions) bool {
	return a.Rating == b.Rating && a.Rejected == b.Rejected && a.Picked == b.Picked && a.ColorLabel == b.ColorLabel &&
		sameKeywords(a.Keywords, b.Keywords) && a.IPTC == b.IPTC
}

// sameKeywords compares keyword lists as sets, in any case, as the API
// keeps them.
func sameKeywords(a, b []string) bool {
	norm := func(ks []string) []string {
		out := make([]string, 0, len(ks))
		for _, k := range ks {
			if k = strings.ToLower(strings.TrimSpace(k)); k != "" && !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(norm(a), norm(b))
}

// describe is a cull in a few words.
func describe(d xmp.Decisions) string {
	parts := []string{"rating " + ratingWord(d)}
	if d.Picked {
		parts = append(parts, "picked")
	}
	parts = append(parts, "label "+labelWord(d.ColorLabel))
	if len(d.Keywords) > 0 {
		parts = append(parts, "keywords "+strings.Join(d.Keywords, ", "))
	}
	return strings.Join(parts, "; ")
}

func ratingWord(d xmp.Decisions) string {
	switch {
	case d.Rejected:
		return "reject"
	case d.Rating == 0:
		return "none"
	}
	return fmt.Sprint(d.Rating)
}

func labelWord(l string) string {
	if l == "" {
		return "none"
	}
	return l
}

// ---- xmp read ----

// The rule of `xmp read`: a packet wins over Lightbox only when its file
// changed after Lightbox's decision did. Lightbox's time is the key
// owner's rating's updatedAt for the stars, flags and label, and the
// asset's updatedAt for the keywords; an asset never rated has no time,
// so its packet wins. A packet that says what `xmp write` would write
// changes nothing, so reading right after writing is a no-op.

func xmpRead(ctx context.Context, api *apiClient, o xmpOptions, assets []*remoteAsset, stdout, stderr io.Writer) error {
	matches, err := matchFiles(ctx, o.dir, assets)
	if err != nil {
		return err
	}
	var changed, older, without, failed int
	for _, m := range matches {
		packet, mtime, err := readPacket(m.path, o.naming)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", m.path, err)
			failed++
			continue
		}
		if packet == nil {
			without++
			continue
		}
		side, _, err := xmp.Read(packet)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", m.path, err)
			failed++
			continue
		}
		// What Lightbox would write is the baseline: a pick written as
		// stars or a label is then not taken for the photographer's.
		d := m.asset.decisions()
		ours, err := xmp.Write(nil, d, xmp.WriteOptions{Pick: o.pick})
		if err != nil {
			return err
		}
		base, _, err := xmp.Read(ours)
		if err != nil {
			return err
		}
		var ratedAt time.Time
		if m.asset.MyRating != nil {
			ratedAt = m.asset.MyRating.UpdatedAt
		}
		rate, rateSaid := ratingChange(base, side, mtime.After(ratedAt))
		kw, kwSaid := keywordChange(base, side, d, mtime.After(m.asset.UpdatedAt))
		captions, capSaid := captionChange(base, side, m.asset.IPTC, mtime.After(m.asset.UpdatedAt))
		if captions != nil {
			if kw == nil {
				kw = map[string]any{}
			}
			kw["iptc"] = captions
		}
		if rate == nil && kw == nil {
			if len(rateSaid)+len(kwSaid)+len(capSaid) > 0 {
				older++
			}
			continue
		}
		if rate != nil {
			if err := api.call(ctx, http.MethodPost, "/v1/assets/"+m.asset.ID+"/ratings", rate, nil); err != nil {
				return err
			}
		}
		if kw != nil {
			if err := api.call(ctx, http.MethodPatch, "/v1/assets/"+m.asset.ID, kw, nil); err != nil {
				return err
			}
		}
		changed++
		var said []string
		if rate != nil {
			said = append(said, rateSaid...)
		}
		if kw != nil {
			said = append(said, kwSaid...)
			said = append(said, capSaid...)
		}
		fmt.Fprintf(stdout, "%s: %s\n", filepath.Base(m.path), strings.Join(said, "; "))
	}
	nf := notFound(assets, matches)
	fmt.Fprintf(stdout, "matched %d, changed %d, older than Lightbox %d, no packet %d, not found %d",
		len(matches), changed, older, without, len(nf))
	if len(nf) > 0 {
		fmt.Fprintf(stdout, " (%s)", someNames(nf))
	}
	fmt.Fprintln(stdout)
	if failed > 0 {
		return fmt.Errorf("%d packets not read", failed)
	}
	return nil
}

// readPacket is the photo's sidecar, or else the packet inside it, and
// when that file last changed; nil when it has none.
func readPacket(path, naming string) ([]byte, time.Time, error) {
	for _, p := range []string{sidecarPath(path, naming), path} {
		info, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, time.Time{}, err
		}
		if p != path && info.Size() > xmp.MaxPacket {
			return nil, time.Time{}, fmt.Errorf("%s: larger than %d bytes", filepath.Base(p), xmp.MaxPacket)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, time.Time{}, err
		}
		if p == path {
			b = embeddedPacket(b)
		}
		return b, info.ModTime(), nil
	}
	return nil, time.Time{}, nil
}

// ratingChange is the rating change that brings Lightbox to what the
// packet says where it differs from base, and its words; the change is
// nil when nothing differs or the packet is not newer.
func ratingChange(base, side xmp.Decisions, newer bool) (map[string]any, []string) {
	ch, said := map[string]any{}, []string{}
	if side.Rejected != base.Rejected || (!side.Rejected && side.Rating != base.Rating) {
		if side.Rejected != base.Rejected {
			ch["rejected"] = side.Rejected
		}
		if !side.Rejected && side.Rating != base.Rating {
			if side.Rating == 0 {
				ch["rating"] = nil
			} else {
				ch["rating"] = side.Rating
			}
		}
		said = append(said, fmt.Sprintf("rating %s → %s", ratingWord(base), ratingWord(side)))
	}
	if side.Picked != base.Picked && !side.Rejected {
		ch["picked"] = side.Picked
		said = append(said, fmt.Sprintf("picked %t → %t", base.Picked, side.Picked))
	}
	if side.ColorLabel != base.ColorLabel {
		if side.ColorLabel == "" {
			ch["colorLabel"] = nil
		} else {
			ch["colorLabel"] = side.ColorLabel
		}
		said = append(said, fmt.Sprintf("label %s → %s", labelWord(base.ColorLabel), labelWord(side.ColorLabel)))
	}
	if len(ch) == 0 || !newer {
		return nil, said
	}
	return ch, said
}

// keywordChange is the keyword list the packet gives where it differs.
func keywordChange(base, side, current xmp.Decisions, newer bool) (map[string]any, []string) {
	if sameKeywords(base.Keywords, side.Keywords) {
		return nil, nil
	}
	said := []string{fmt.Sprintf("keywords %s → %s", keywordWords(current.Keywords), keywordWords(side.Keywords))}
	if !newer {
		return nil, said
	}
	return map[string]any{"keywords": append([]string{}, side.Keywords...)}, said
}

// captionChange is the asset's IPTC object with the captions the packet
// changes from base set or cleared, every other field kept as it is, and
// its words; nil when no caption differs or the packet is not newer.
func captionChange(base, side xmp.Decisions, current json.RawMessage, newer bool) (map[string]any, []string) {
	was, now := captionMap(base.IPTC), captionMap(side.IPTC)
	var keys []string
	for k := range now {
		if now[k] != was[k] {
			keys = append(keys, k)
		}
	}
	for k := range was {
		if _, ok := now[k]; !ok {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	slices.Sort(keys)
	said := make([]string, len(keys))
	for i, k := range keys {
		said[i] = fmt.Sprintf("%s %s → %s", k, captionWord(was[k]), captionWord(now[k]))
	}
	if !newer {
		return nil, said
	}
	out := map[string]any{}
	_ = json.Unmarshal(current, &out) // an asset without captions has {} or null
	for _, k := range keys {
		if v, ok := now[k]; ok {
			out[k] = v
		} else {
			delete(out, k)
		}
	}
	return out, said
}

// captionMap is c's non-empty captions by their API names.
func captionMap(c xmp.IPTC) map[string]string {
	b, _ := json.Marshal(c) // empty captions are omitted
	m := map[string]string{}
	_ = json.Unmarshal(b, &m)
	return m
}

func captionWord(s string) string {
	if s == "" {
		return "none"
	}
	return strconv.Quote(s)
}

func keywordWords(ks []string) string {
	if len(ks) == 0 {
		return "none"
	}
	return strings.Join(ks, ", ")
}
