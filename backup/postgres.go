package backup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// pgTool finds PostgreSQL's client program name: in binDir when given,
// else the newest under /usr/lib/postgresql/*/bin (where Debian keeps each
// major version's, and a newer pg_dump reads an older server), else on
// PATH.
func pgTool(binDir, name string) (string, error) {
	if binDir != "" {
		p := filepath.Join(binDir, name)
		if _, err := exec.LookPath(p); err != nil {
			return "", fmt.Errorf("%s: %w", p, err)
		}
		return p, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return majorOf(b) - majorOf(a) })
	for _, d := range dirs {
		if p, err := exec.LookPath(filepath.Join(d, name)); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s is not on PATH nor under /usr/lib/postgresql/*/bin: install PostgreSQL's client programs "+
		"(Debian: apt-get install postgresql-client) or set PG_BINDIR", name)
}

// majorOf is the version in /usr/lib/postgresql/VERSION/bin.
func majorOf(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// libpqEnv turns a lib/pq DSN (a postgres:// URL or key=value pairs) into
// the PG* variables pg_dump and pg_restore read, so no password shows on
// a command line. Settings lib/pq sends as run-time parameters (such as
// search_path) go in PGOPTIONS; lib/pq's own switches are dropped. It
// returns env to add to the process's, and the database name.
func libpqEnv(dsn string) ([]string, string, error) {
	kv, err := dsnPairs(dsn)
	if err != nil {
		return nil, "", err
	}
	vars := map[string]string{
		"host": "PGHOST", "hostaddr": "PGHOSTADDR", "port": "PGPORT", "user": "PGUSER", "password": "PGPASSWORD",
		"dbname": "PGDATABASE", "sslmode": "PGSSLMODE", "sslcert": "PGSSLCERT", "sslkey": "PGSSLKEY",
		"sslrootcert": "PGSSLROOTCERT", "connect_timeout": "PGCONNECT_TIMEOUT", "application_name": "PGAPPNAME",
		"krbsrvname": "PGKRBSRVNAME", "service": "PGSERVICE",
	}
	libpqOnly := map[string]bool{"fallback_application_name": true, "binary_parameters": true,
		"disable_prepared_binary_result": true, "sslinline": true, "krbspn": true, "sslsni": true}
	var env []string
	var opts []string
	for _, p := range kv {
		switch name, ok := vars[p[0]]; {
		case ok:
			env = append(env, name+"="+p[1])
		case p[0] == "options":
			opts = append(opts, p[1])
		case libpqOnly[p[0]]:
		default:
			opts = append(opts, "-c "+optionEscape(p[0]+"="+p[1]))
		}
	}
	if len(opts) > 0 {
		env = append(env, "PGOPTIONS="+strings.Join(opts, " "))
	}
	// lib/pq's defaults where libpq's differ: TCP to localhost, not the
	// socket.
	if !hasKey(kv, "host") && os.Getenv("PGHOST") == "" {
		env = append(env, "PGHOST=localhost")
	}
	db := valueOf(kv, "dbname")
	if db == "" {
		db = os.Getenv("PGDATABASE")
	}
	if db == "" {
		db = cmpOr(valueOf(kv, "user"), os.Getenv("PGUSER"))
	}
	return env, db, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func hasKey(kv [][2]string, k string) bool {
	return slices.ContainsFunc(kv, func(p [2]string) bool { return p[0] == k })
}

func valueOf(kv [][2]string, k string) string {
	v := ""
	for _, p := range kv {
		if p[0] == k {
			v = p[1]
		}
	}
	return v
}

// optionEscape escapes a value for PGOPTIONS, where spaces separate words.
func optionEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, " ", `\ `).Replace(s)
}

// dsnPairs reads a DSN's settings in order.
func dsnPairs(dsn string) ([][2]string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return nil, fmt.Errorf("DATABASE_URL: %w", err)
		}
		var kv [][2]string
		if u.User != nil {
			kv = append(kv, [2]string{"user", u.User.Username()})
			if pw, ok := u.User.Password(); ok {
				kv = append(kv, [2]string{"password", pw})
			}
		}
		if h := u.Hostname(); h != "" {
			kv = append(kv, [2]string{"host", h})
		}
		if p := u.Port(); p != "" {
			kv = append(kv, [2]string{"port", p})
		}
		if db := strings.TrimPrefix(u.Path, "/"); db != "" {
			kv = append(kv, [2]string{"dbname", db})
		}
		q := u.Query()
		keys := make([]string, 0, len(q))
		for k := range q {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			kv = append(kv, [2]string{k, q.Get(k)})
		}
		return kv, nil
	}
	return parseKeyValues(dsn)
}

// parseKeyValues reads "key=value key='quoted \' value'", as libpq does.
func parseKeyValues(s string) ([][2]string, error) {
	var kv [][2]string
	r := []rune(s)
	i := 0
	skip := func() {
		for i < len(r) && (r[i] == ' ' || r[i] == '\t' || r[i] == '\n') {
			i++
		}
	}
	for {
		skip()
		if i >= len(r) {
			return kv, nil
		}
		start := i
		for i < len(r) && r[i] != '=' && r[i] != ' ' {
			i++
		}
		key := string(r[start:i])
		skip()
		if i >= len(r) || r[i] != '=' {
			return nil, fmt.Errorf("DATABASE_URL: %q has no value", key)
		}
		i++
		skip()
		var v strings.Builder
		if i < len(r) && r[i] == '\'' {
			i++
			for ; i < len(r) && r[i] != '\''; i++ {
				if r[i] == '\\' && i+1 < len(r) {
					i++
				}
				v.WriteRune(r[i])
			}
			if i >= len(r) {
				return nil, fmt.Errorf("DATABASE_URL: the value of %q has no closing quote", key)
			}
			i++
		} else {
			for ; i < len(r) && r[i] != ' ' && r[i] != '\t' && r[i] != '\n'; i++ {
				if r[i] == '\\' && i+1 < len(r) {
					i++
				}
				v.WriteRune(r[i])
			}
		}
		kv = append(kv, [2]string{key, v.String()})
	}
}

// pgCommand is a PostgreSQL client program connecting where dsn says.
func pgCommand(ctx context.Context, binDir, name, dsn string, args ...string) (*exec.Cmd, *tailBuffer, error) {
	bin, err := pgTool(binDir, name)
	if err != nil {
		return nil, nil, err
	}
	env, _, err := libpqEnv(dsn)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	stderr := &tailBuffer{max: 4096}
	cmd.Stderr = stderr
	return cmd, stderr, nil
}

// dumpReader is pg_dump's output: its end is an error unless pg_dump
// exited well, so a dump cut short is never kept as whole.
type dumpReader struct {
	out    io.Reader
	cmd    *exec.Cmd
	stderr *tailBuffer
	once   sync.Once
	mu     sync.Mutex
	done   bool
	err    error
}

func (d *dumpReader) Read(p []byte) (int, error) {
	n, err := d.out.Read(p)
	if err == io.EOF {
		if werr := d.wait(); werr != nil {
			return n, werr
		}
	}
	return n, err
}

// wait waits for pg_dump to exit, and says how it did.
func (d *dumpReader) wait() error {
	d.once.Do(func() {
		err := d.cmd.Wait()
		if err != nil {
			err = fmt.Errorf("pg_dump: %w: %s", err, d.stderr)
		}
		d.mu.Lock()
		d.done, d.err = true, err
		d.mu.Unlock()
	})
	return d.exited()
}

// exited is pg_dump's failure once it has exited, without waiting.
func (d *dumpReader) exited() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// startDump runs pg_dump in PostgreSQL's custom format on the exported
// snapshot and returns its output.
func startDump(ctx context.Context, binDir, dsn, snapshot string) (*dumpReader, error) {
	cmd, stderr, err := pgCommand(ctx, binDir, "pg_dump", dsn, "--format=custom", "--no-password", "--snapshot="+snapshot)
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("pg_dump: %w", err)
	}
	return &dumpReader{out: out, cmd: cmd, stderr: stderr}, nil
}

// pgRestore loads the custom-format dump at file into the database dsn
// names, in one transaction: whatever the database held of the same
// objects is dropped first, and a failure leaves it as it was.
func pgRestore(ctx context.Context, binDir, dsn, file string) error {
	_, db, err := libpqEnv(dsn)
	if err != nil {
		return err
	}
	cmd, stderr, err := pgCommand(ctx, binDir, "pg_restore", dsn, "--clean", "--if-exists", "--no-owner",
		"--no-privileges", "--exit-on-error", "--single-transaction", "--no-password", "--dbname="+conninfoQuote(db), file)
	if err != nil {
		return err
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pg_restore: %w: %s", err, stderr)
	}
	return nil
}

// conninfoQuote makes a database name a conninfo string, so a name that
// holds "=" is not taken for one.
func conninfoQuote(db string) string {
	return "dbname='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(db) + "'"
}

// tailBuffer keeps the last max bytes written, for an error message.
type tailBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(bytes.TrimSpace(t.b))
	if s == "" {
		return "no message"
	}
	return s
}

var errStop = errors.New("stop")
