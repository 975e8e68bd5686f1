package backup

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"lightbox/blob"
	"lightbox/chain"
)

// Options is what Create backs up, and how.
type Options struct {
	// DatabaseURL is the service's database, as DATABASE_URL names it.
	DatabaseURL string
	// Blobs is the service's blob store.
	Blobs blob.Store
	// LedgerPath is the chain's file ledger; empty when the ledger is an
	// HTTP log (CHAIN_LEDGER_URL), which keeps its own copy.
	LedgerPath string
	// ChainKeys, when known, are recorded so a restore can verify the
	// chain without the signing key.
	ChainKeys *chain.Keys
	// Secrets go in only when set, sealed with Passphrase.
	Secrets    *Secrets
	Passphrase string
	// OriginalsOnly leaves out what can be drawn again from the
	// originals: thumbnails, previews, edit renders, gallery previews,
	// export archives. Originals and XMP sidecars are kept.
	OriginalsOnly bool
	// Concurrency is how many blobs are copied at once (DefaultConcurrency
	// when 0).
	Concurrency int
	// Lightbox is the version recorded in the manifest.
	Lightbox string
	// PGBinDir is where pg_dump and pg_restore are, when not found by
	// themselves (see pgTool).
	PGBinDir string
	// Progress hears of each blob done, one call at a time.
	Progress func(BlobEvent)
}

// Report says what Create did.
type Report struct {
	Manifest *Manifest
	// Copied blobs were written to the target; Present ones it held
	// already (from an earlier or an interrupted backup).
	Copied, Present int
	CopiedBytes     int64
	PresentBytes    int64
	// Lost counts files rows named that storage did not hold and still
	// names (NotStored); Manifest.Missing lists every missing file.
	Lost int
}

// Create takes a backup of the service into t while it serves, and
// returns once its manifest is written: the database as pg_dump saw it in
// one snapshot, the files the snapshot's rows name, the chain's ledger
// and, when asked, the secrets. Stopped midway (an error, a cancelled
// ctx, a killed process) it leaves an incomplete backup that List shows
// as such and the next Create reuses the blobs of.
func Create(ctx context.Context, t Target, o Options) (*Report, error) {
	var sealed []byte
	if o.Secrets != nil {
		var err error
		if sealed, err = seal(*o.Secrets, o.Passphrase); err != nil {
			return nil, err
		}
	}
	conc := o.Concurrency
	if conc <= 0 {
		conc = DefaultConcurrency
	}
	started := time.Now().UTC()
	m := &Manifest{Format: Format, StartedAt: started, Lightbox: o.Lightbox, OriginalsOnly: o.OriginalsOnly}
	if k := o.ChainKeys; k != nil {
		m.ChainKeys = &ChainKeys{Current: hex.EncodeToString(k.Current)}
		for _, r := range k.Retired {
			m.ChainKeys.Retired = append(m.ChainKeys.Retired, hex.EncodeToString(r))
		}
	}

	// The newest backup knows the SHA-256 of files whose rows record
	// none, so they are not read again to be found in the target. It
	// only saves reading: a backup without one (or with one that cannot
	// be read) hashes them.
	prev := map[string]Blob{}
	if last, err := Find(ctx, t, ""); err == nil {
		for _, b := range last.Blobs {
			prev[b.Key] = b
		}
	}
	id, err := newID(ctx, t, started)
	if err != nil {
		return nil, err
	}
	m.ID = id

	snap, err := openSnapshot(ctx, o.DatabaseURL)
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	refs, err := dumpDatabase(ctx, t, o, snap, m)
	if err != nil {
		return nil, err
	}
	snap.End()

	rep := &Report{Manifest: m}
	if err := copyBlobs(ctx, t, o, conc, snap, prev, refs, rep); err != nil {
		return nil, err
	}
	if o.LedgerPath != "" {
		if m.Ledger, err = copyLedger(ctx, t, o.LedgerPath, backupDir(id)+"ledger.jsonl"); err != nil {
			return nil, err
		}
	}
	if sealed != nil {
		info, err := t.Put(ctx, backupDir(id)+"secrets.age", bytes.NewReader(sealed), int64(len(sealed)), "")
		if err != nil {
			return nil, targetError(t, err)
		}
		m.Secrets = &File{Path: backupDir(id) + "secrets.age", Size: info.Size, SHA256: info.SHA256}
	}
	m.FinishedAt = time.Now().UTC()
	if err := writeManifest(ctx, t, m); err != nil {
		return nil, targetError(t, err)
	}
	return rep, nil
}

// newID names a backup started at when and claims the name: its UTC
// time, with a number after it when a backup begun in the same second
// holds the name. Two backups of one second (from two machines) could
// both find a name free, so each writes a claim into the name's folder
// and lists the folder again: one that finds anything but its own claim
// gives the name up and tries the next. Of two claims, the later one's
// listing sees the earlier, so no name is kept twice.
func newID(ctx context.Context, t Target, when time.Time) (string, error) {
	base := when.Format(idLayout)
	token := make([]byte, 8)
	if _, err := rand.Read(token); err != nil {
		return "", err
	}
	for n := 1; ; n++ {
		id := base
		if n > 1 {
			id += "-" + strconv.Itoa(n)
		}
		taken, err := objectsIn(ctx, t, backupDir(id), "")
		if err != nil {
			return "", err
		}
		if taken {
			continue
		}
		claim := backupDir(id) + "claim-" + hex.EncodeToString(token)
		if _, err := t.Put(ctx, claim, bytes.NewReader(nil), 0, ""); err != nil {
			return "", targetError(t, err)
		}
		others, err := objectsIn(ctx, t, backupDir(id), claim)
		if err != nil {
			return "", err
		}
		if !others {
			return id, nil
		}
		// The folder is another backup's, or both claimed it at once:
		// the next name, after a moment that parts two runs in step.
		if err := t.Delete(ctx, claim); err != nil {
			return "", targetError(t, err)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(time.Duration(token[n%len(token)]) * time.Millisecond):
		}
	}
}

// objectsIn reports whether t holds anything under prefix but the object
// except.
func objectsIn(ctx context.Context, t Target, prefix, except string) (bool, error) {
	found := false
	err := t.List(ctx, prefix, func(i blob.Info) error {
		if i.Key == except {
			return nil
		}
		found = true
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) {
		return false, targetError(t, err)
	}
	return found, nil
}

// dumpDatabase streams pg_dump's output of the snapshot into the target,
// and meanwhile reads, in the same snapshot, the schema version, the
// chain head and the files the rows name.
func dumpDatabase(ctx context.Context, t Target, o Options, snap *snapshot, m *Manifest) ([]blobRef, error) {
	dctx, stop := context.WithCancel(ctx)
	defer stop()
	dump, err := startDump(dctx, o.PGBinDir, o.DatabaseURL, snap.ID)
	if err != nil {
		return nil, err
	}
	type read struct {
		refs []blobRef
		err  error
	}
	facts := make(chan read, 1)
	go func() {
		var r read
		if m.SchemaVersion, m.ChainHead, r.err = snap.facts(dctx); r.err == nil {
			r.refs, r.err = snap.refs(dctx, o.OriginalsOnly)
		}
		if r.err != nil {
			stop()
		}
		facts <- r
	}()
	path := backupDir(m.ID) + "db.dump"
	info, err := t.Put(dctx, path, dump, -1, "")
	if err != nil {
		if derr := dump.exited(); derr != nil {
			err = derr
		} else {
			err = targetError(t, err)
		}
		stop()
		dump.wait()
		// A failed read stops pg_dump, and so the write: its own error
		// is the one to tell.
		if r := <-facts; r.err != nil && !errors.Is(r.err, context.Canceled) {
			return nil, r.err
		}
		return nil, err
	}
	werr := dump.wait()
	r := <-facts
	switch {
	case werr != nil:
		return nil, werr
	case r.err != nil:
		return nil, r.err
	}
	m.Database = File{Path: path, Size: info.Size, SHA256: info.SHA256}
	return r.refs, nil
}

// copyBlobs copies the files refs name, conc at a time and in the
// background (inBackground), into the manifest in key order.
func copyBlobs(ctx context.Context, t Target, o Options, conc int, snap *snapshot, prev map[string]Blob, refs []blobRef, rep *Report) error {
	c := &copier{src: o.Blobs, dst: t, prev: prev, named: snap.namedNow}
	if err := c.loadPresent(ctx); err != nil {
		return targetError(t, err)
	}
	results := make([]result, len(refs))
	var mu sync.Mutex
	done := 0
	err := inBackground(ctx, len(refs), conc, func(ctx context.Context, i int) error {
		r, err := c.copyOne(ctx, refs[i])
		if err != nil {
			return blobError(t, refs[i].Key, err)
		}
		results[i] = r
		mu.Lock()
		defer mu.Unlock()
		done++
		if o.Progress != nil {
			var size int64
			if r.blob != nil {
				size = r.blob.Size
			}
			o.Progress(BlobEvent{Key: refs[i].Key, Size: size, Outcome: r.outcome, Done: done, Total: len(refs)})
		}
		return nil
	})
	if err != nil {
		return err
	}
	m := rep.Manifest
	m.Blobs = make([]Blob, 0, len(refs))
	for _, r := range results {
		switch r.outcome {
		case Copied:
			rep.Copied++
			rep.CopiedBytes += r.copied
		case Present:
			rep.Present++
			rep.PresentBytes += r.blob.Size
		case Absent:
			m.Missing = append(m.Missing, *r.missing)
			if r.missing.Reason == NotStored {
				rep.Lost++
			}
			continue
		}
		m.Blobs = append(m.Blobs, *r.blob)
	}
	return nil
}

// copyLedger copies the ledger file up to its last whole line: lines
// appended meanwhile are of attestations after the snapshot, which a
// reader of the ledger ignores, as it does a line cut short.
func copyLedger(ctx context.Context, t Target, path, key string) (*File, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // nothing attested yet
	}
	if err != nil {
		return nil, fmt.Errorf("chain ledger: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("chain ledger: %w", err)
	}
	n, err := wholeLines(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("chain ledger: %w", err)
	}
	info, err := t.Put(ctx, key, sourceReader{io.NewSectionReader(f, 0, n)}, n, "")
	if err != nil {
		return nil, targetError(t, err)
	}
	return &File{Path: key, Size: info.Size, SHA256: info.SHA256}, nil
}

// wholeLines is the length of f's first size bytes up to and including
// their last newline.
func wholeLines(f io.ReaderAt, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for end := size; end > 0; {
		start := max(0, end-int64(len(buf)))
		b := buf[:end-start]
		if _, err := f.ReadAt(b, start); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

// targetError says which side failed, and how: a full target and one that
// does not answer are told apart from other refusals.
func targetError(t Target, err error) error {
	var src *sourceError
	switch {
	case errors.As(err, &src), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, blob.ErrFull):
		return fmt.Errorf("the backup target %s is full: %w", t, err)
	case errors.Is(err, blob.ErrUnavailable):
		return fmt.Errorf("the backup target %s does not answer: %w", t, err)
	}
	return fmt.Errorf("the backup target %s: %w", t, err)
}

func blobError(t Target, key string, err error) error {
	return fmt.Errorf("%s: %w", key, targetError(t, err))
}

// publicKeys reads the manifest's chain keys.
func (k *ChainKeys) keys() (chain.Keys, error) {
	cur, err := hex.DecodeString(k.Current)
	if err != nil || len(cur) != ed25519.PublicKeySize {
		return chain.Keys{}, fmt.Errorf("manifest: chain key %q is not an Ed25519 public key", k.Current)
	}
	return chain.NewKeys(ed25519.PublicKey(cur), k.Retired...)
}
