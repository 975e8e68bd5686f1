package chain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
)

// Ledger is where signed transactions are published, outside Postgres. A
// Publish that returns nil means the ledger holds tx durably. The Flusher
// calls Publish from many goroutines at once.
//
// A Publish that fails because the ledger itself is unavailable (not
// reached, out of space, answering 5xx) wraps ErrLedgerDown, so an outage
// is not charged to the item that met it; any other error is the ledger
// refusing that transaction.
type Ledger interface {
	Publish(ctx context.Context, tx *Transaction) error
}

// ErrLedgerDown marks a publish that failed because the ledger as a whole
// is unavailable.
var ErrLedgerDown = errors.New("ledger unavailable")

func ledgerDown(err error) error { return fmt.Errorf("%w: %w", ErrLedgerDown, err) }

// FileLedger is the default ledger: an append-only file, one Transaction as
// JSON per line, each fsynced before Publish returns.
//
// It is a file rather than a table because a witness kept in the database
// it witnesses adds nothing: whoever can rewrite attestations can rewrite a
// ledger table beside them. A file can live on another disk, be made
// append-only (chattr +a) and be shipped elsewhere by ordinary tools.
type FileLedger struct {
	mu      sync.Mutex // orders writes
	f       *os.File
	size    int64 // bytes known written whole
	written int64 // lines written
	syncMu  sync.Mutex
	synced  int64 // lines known on disk
	broken  error // a failed fsync: later ones may lie, so stop
}

// OpenFileLedger opens (creating it if needed) the ledger file at path.
func OpenFileLedger(path string) (*FileLedger, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	l := &FileLedger{f: f, size: st.Size()}
	// A crash mid-write can leave a torn last line; end it so the next
	// line starts clean. Readers skip lines that do not parse.
	if l.size > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, l.size-1); err != nil {
			f.Close()
			return nil, err
		}
		if last[0] != '\n' {
			if _, err := f.Write([]byte{'\n'}); err != nil {
				f.Close()
				return nil, err
			}
			l.size++
		}
	}
	return l, nil
}

// Publish appends tx and returns once it is on disk. Concurrent calls share
// fsyncs: one sync covers every line written before it started.
func (l *FileLedger) Publish(ctx context.Context, tx *Transaction) error {
	line, err := json.Marshal(tx)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	if err := ctx.Err(); err != nil {
		return err
	}

	l.mu.Lock()
	if l.f == nil {
		l.mu.Unlock()
		return ledgerDown(errors.New("file ledger is closed"))
	}
	if n, err := l.f.Write(line); err != nil {
		// Cut a partial line off so it cannot glue onto the next one.
		if n > 0 {
			l.f.Truncate(l.size)
		}
		l.mu.Unlock()
		return ledgerDown(fmt.Errorf("file ledger: %w", err))
	}
	l.size += int64(len(line))
	l.written++
	mine := l.written
	l.mu.Unlock()

	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.broken != nil {
		return l.broken
	}
	if l.synced >= mine {
		return nil
	}
	l.mu.Lock()
	upTo, f := l.written, l.f
	l.mu.Unlock()
	if f == nil {
		return ledgerDown(errors.New("file ledger is closed"))
	}
	if err := f.Sync(); err != nil {
		// After a failed fsync the kernel may have dropped the pages and a
		// later fsync can report success anyway, so nothing is trusted again
		// until the ledger is reopened.
		l.broken = ledgerDown(fmt.Errorf("file ledger: %w", err))
		return l.broken
	}
	l.synced = upTo
	return nil
}

// Close closes the file.
func (l *FileLedger) Close() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// HTTPLedger publishes to an external log: each transaction is POSTed as
// JSON to URL, with its tx_id in the Idempotency-Key header so the log can
// accept a repeat as the same entry. Any 2xx answer means published.
type HTTPLedger struct {
	URL    string
	Header http.Header // sent with every request, e.g. Authorization
	Client *http.Client
}

// NewHTTPLedger checks rawURL and returns a ledger whose client keeps up to
// concurrency connections alive, so parallel publishes reuse them.
func NewHTTPLedger(rawURL string, concurrency int) (*HTTPLedger, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errorf(CodeInvalidLedger, "ledger URL %q must be an absolute http or https URL", rawURL)
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = max(concurrency, 2)
	return &HTTPLedger{URL: rawURL, Client: &http.Client{Transport: t}}, nil
}

// Publish POSTs tx and waits for the answer.
func (l *HTTPLedger) Publish(ctx context.Context, tx *Transaction) error {
	body, err := json.Marshal(tx)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range l.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", tx.TxID)
	client := l.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return ledgerDown(fmt.Errorf("http ledger: %w", err))
	}
	defer resp.Body.Close()
	// Read a little of the answer for the error, and drain the rest so the
	// connection can be reused.
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		err := fmt.Errorf("http ledger: %s: %s", resp.Status, bytes.TrimSpace(head))
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			err = ledgerDown(err)
		}
		return err
	}
	return nil
}
