package e2e_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/lib/pq"
	"github.com/redis/go-redis/v9"

	"lightbox/redisconn"
	"lightbox/testsupport/testenv"
)

// The topology of the failover test: its own primary, replica and three
// sentinels on loopback, never the shared Redis.
const (
	sentinelMaster   = "lightbox"
	sentinelPassword = "failover-test-password"
)

// redisNode is one redis-server process the test started: a primary, a
// replica or a sentinel, on a free loopback port with its files in a
// folder of its own.
type redisNode struct {
	name string
	port int
	cmd  *exec.Cmd
	once sync.Once
}

// startRedisNode writes conf (after the lines every node shares) and
// starts the node, in sentinel mode when asked. Debian's redis-sentinel is
// the same program as redis-server.
func startRedisNode(t *testing.T, logDir, name string, sentinel bool, conf string) *redisNode {
	t.Helper()
	server, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("the failover test starts its own Redis: install it with apt-get install -y redis-server redis-sentinel (scripts/e2e-deps.sh does, as root)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	file := filepath.Join(dir, name+".conf")
	all := fmt.Sprintf("bind 127.0.0.1\nport %d\ndir %s\nlogfile %s\n%s\n", port, dir, filepath.Join(logDir, name+".log"), conf)
	if err := os.WriteFile(file, []byte(all), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(server, file)
	if sentinel {
		if bin, err := exec.LookPath("redis-sentinel"); err == nil {
			cmd = exec.Command(bin, file)
		} else {
			cmd.Args = append(cmd.Args, "--sentinel")
		}
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	n := &redisNode{name: name, port: port, cmd: cmd}
	t.Cleanup(n.kill)
	return n
}

func (n *redisNode) addr() string { return "127.0.0.1:" + strconv.Itoa(n.port) }

// kill ends the node at once: nothing it holds reaches anyone after.
func (n *redisNode) kill() {
	n.once.Do(func() {
		n.cmd.Process.Kill()
		n.cmd.Wait()
	})
}

func (n *redisNode) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := n.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%s: %v", n.name, err)
	}
}

// TestFailoverToAReplicaMidBatch runs a server and a worker on Redis
// through Sentinel, loses the primary mid-batch with writes its replica
// never received, and finds every asset ready once the replica is
// promoted: the sweeper hands the lost tasks over again from Postgres.
func TestFailoverToAReplicaMidBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	logDir, err := filepath.Abs(filepath.Join(artifacts, "sentinel"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	auth := fmt.Sprintf("requirepass %s\nmasterauth %s\nsave \"\"\nappendonly no", sentinelPassword, sentinelPassword)
	primary := startRedisNode(t, logDir, "primary", false, auth)
	replica := startRedisNode(t, logDir, "replica", false, auth+"\nreplicaof 127.0.0.1 "+strconv.Itoa(primary.port))
	node := func(n *redisNode) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: n.addr(), Password: sentinelPassword, MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		return c
	}
	replicaClient := node(replica)
	testenv.EventuallyEvery(t, "the replica to follow the primary", patience, 100*time.Millisecond, func() bool {
		info, _ := replicaClient.Info(ctx, "replication").Result()
		return strings.Contains(info, "master_link_status:up")
	})

	// A primary is down after a second without an answer, and two of the
	// three sentinels must agree.
	var sentinels []*redisNode
	var addrs []string
	for i := range 3 {
		s := startRedisNode(t, logDir, fmt.Sprintf("sentinel%d", i+1), true, strings.Join([]string{
			fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 2", sentinelMaster, primary.port),
			fmt.Sprintf("sentinel auth-pass %s %s", sentinelMaster, sentinelPassword),
			fmt.Sprintf("sentinel down-after-milliseconds %s 1000", sentinelMaster),
			fmt.Sprintf("sentinel failover-timeout %s 5000", sentinelMaster),
		}, "\n"))
		sentinels = append(sentinels, s)
		addrs = append(addrs, s.addr())
	}
	watch := redis.NewSentinelClient(&redis.Options{Addr: sentinels[0].addr(), MaxRetries: -1})
	defer watch.Close()
	for _, s := range sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: s.addr()})
		testenv.EventuallyEvery(t, s.name+" to know the replica and the other sentinels", patience, 200*time.Millisecond, func() bool {
			m, err := c.Master(ctx, sentinelMaster).Result()
			return err == nil && m["num-slaves"] == "1" && m["num-other-sentinels"] == "2"
		})
		c.Close()
	}

	url := fmt.Sprintf("redis-sentinel://:%s@%s/%s/0", sentinelPassword, strings.Join(addrs, ","), sentinelMaster)
	logFile, err := os.Create(filepath.Join(artifacts, "stack-sentinel.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	// The sweep looks for the task of a job whose row has been quiet for
	// 5 s rather than the default two minutes: the queues the replica
	// brings along are paused (below) for as long as the jobs must wait.
	s := startStack(t, logFile, map[string]string{"REDIS_URL": url, "SWEEP_INTERVAL": "2s", "SWEEP_RECONCILE_AFTER": "5s"})
	key := s.user("failover@example.org", false)
	var p struct {
		ID string `json:"id"`
	}
	if code := s.call("POST", "/v1/projects", key, map[string]any{"title": "Failover"}, &p); code != http.StatusCreated {
		t.Fatalf("create project: %d", code)
	}
	const n = 10
	assets := s.put(key, p.ID, distinctPhotos(t, n)...)

	conn, err := redisconn.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	inspector := asynq.NewInspector(conn.Asynq())
	defer inspector.Close()
	queues := []string{"default", "low"}
	pause := func(why string) {
		t.Helper()
		for _, q := range queues {
			if err := inspector.PauseQueue(q); err != nil {
				t.Fatalf("pause %s (%s): %v", q, why, err)
			}
		}
	}
	// The replica takes its queues paused: once promoted, it keeps the
	// jobs the sweep hands over again waiting until the batch's stream is
	// open, however soon the sweep comes.
	pause("for the replica")
	testenv.EventuallyEvery(t, "the replica to hold the pause", patience, 100*time.Millisecond, func() bool {
		n, _ := replicaClient.Exists(ctx, "asynq:{default}:paused", "asynq:{low}:paused").Result()
		return n == int64(len(queues))
	})

	// From here the replica hears nothing: it is stopped, and the primary
	// drops its link, so the batch's tasks exist on the primary alone.
	replica.signal(t, syscall.SIGSTOP)
	if err := node(primary).ClientKillByFilter(ctx, "TYPE", "replica").Err(); err != nil {
		t.Fatal(err)
	}
	for _, q := range queues {
		if err := inspector.UnpauseQueue(q); err != nil {
			t.Fatalf("unpause %s on the primary: %v", q, err)
		}
	}
	batch := s.finalize(key, p.ID, assets)
	testenv.EventuallyEvery(s.t, "a first job of the batch to finish", patience, 50*time.Millisecond, func() bool {
		return s.count(`SELECT count(*) FROM jobs WHERE batch_id = $1 AND status = 'done'`, batch) > 0
	})
	// Pausing keeps the rest of the batch waiting until the primary is
	// gone (the pause goes with it); the tasks already running end first,
	// so every job still queued then has its task waiting on the primary.
	pause("on the primary")
	testenv.EventuallyEvery(s.t, "the running tasks to end", patience, 100*time.Millisecond, func() bool {
		for _, q := range queues {
			info, err := inspector.GetQueueInfo(q)
			if err == nil && info.Active > 0 || err != nil && !errors.Is(err, asynq.ErrQueueNotFound) {
				return false
			}
		}
		return true
	})
	// The jobs waiting are those whose tasks wait in the paused queues. A
	// job's row cannot tell: the worker writes a task's states a moment
	// after it ran, so a job that just ended may still read queued.
	var taskIDs []string
	for _, q := range queues {
		pending, err := inspector.ListPendingTasks(q, asynq.PageSize(1000))
		if err != nil && !errors.Is(err, asynq.ErrQueueNotFound) {
			t.Fatal(err)
		}
		for _, task := range pending {
			taskIDs = append(taskIDs, task.ID)
		}
	}
	var killedAt time.Time
	if err := s.env.DB.Get(&killedAt, `SELECT now()`); err != nil {
		t.Fatal(err)
	}
	primary.kill()
	var waiting []string
	if err := s.env.DB.Select(&waiting, `SELECT id FROM jobs WHERE batch_id = $1 AND task_id = ANY($2)`,
		batch, pq.Array(taskIDs)); err != nil {
		t.Fatal(err)
	}
	if len(waiting) == 0 {
		t.Fatal("no job of the batch was still waiting when the primary went")
	}
	replica.signal(t, syscall.SIGCONT)

	testenv.EventuallyEvery(s.t, "the sentinels to promote the replica", patience, 200*time.Millisecond, func() bool {
		a, err := watch.GetMasterAddrByName(ctx, sentinelMaster).Result()
		return err == nil && len(a) == 2 && a[1] == strconv.Itoa(replica.port)
	})
	t.Logf("primary lost with %d of the batch's jobs waiting; replica promoted", len(waiting))

	// Events reach clients through the promoted replica too. Until the
	// server's own subscription has found it, a stream is refused with 503
	// ("poll instead"), so the stream is opened once that is over; the
	// waiting jobs, handed over again, wait in the paused queues.
	stream := s.openStream(key, "/v1/batches/"+batch+"/events")
	completed := make(chan error, 1)
	go func() { completed <- awaitEvent(stream, "batch.completed") }()

	var b struct {
		Batch struct {
			Status    string `json:"status"`
			Total     int    `json:"total"`
			Completed int    `json:"completed"`
			Failed    int    `json:"failed"`
		} `json:"batch"`
	}
	if s.apiGet(key, "/v1/batches/"+batch, &b); b.Batch.Status != "running" && b.Batch.Status != "queued" {
		t.Fatalf("the batch ended (%s) before its event stream could open again", b.Batch.Status)
	}
	// Through Sentinel, the inspector finds the promoted replica.
	testenv.EventuallyEvery(t, "the promoted replica's queues to go on", patience, 200*time.Millisecond, func() bool {
		for _, q := range queues {
			if err := inspector.UnpauseQueue(q); err != nil && !strings.Contains(err.Error(), "not paused") {
				t.Logf("unpause %s: %v", q, err)
				return false
			}
		}
		return true
	})
	testenv.EventuallyEvery(s.t, "the batch to complete", pipelinePatience, time.Second, func() bool {
		s.apiGet(key, "/v1/batches/"+batch, &b)
		return b.Batch.Status != "running" && b.Batch.Status != "queued"
	})
	if b.Batch.Status != "completed" || b.Batch.Failed != 0 || b.Batch.Completed != b.Batch.Total || b.Batch.Total < n {
		t.Fatalf("batch %+v", b.Batch)
	}
	select {
	case err := <-completed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(patience):
		t.Fatal("no batch.completed event on the batch's stream")
	}
	s.waitReady(key, p.ID, n)
	// The promoted replica never held the waiting jobs' tasks: each was
	// handed over again after the primary went.
	if late := s.count(`SELECT count(*) FROM jobs WHERE id = ANY($1) AND status = 'done' AND enqueued_at > $2`,
		"{"+strings.Join(waiting, ",")+"}", killedAt); late != len(waiting) {
		var early []string
		s.env.DB.Select(&early, `SELECT concat_ws(' ', type, status, attempt, enqueued_at, created_at, updated_at) FROM jobs
			WHERE id = ANY($1) AND NOT (status = 'done' AND enqueued_at > $2)`, "{"+strings.Join(waiting, ",")+"}", killedAt)
		t.Fatalf("%d of the %d jobs waiting when the primary went (at %v) were enqueued again and done; the others: %q",
			late, len(waiting), killedAt, early)
	}
}

// openStream opens an event stream, asking again while the server answers
// 503, as it does while its own Redis subscription is down.
func (s *stack) openStream(key, path string) *http.Response {
	s.t.Helper()
	var res *http.Response
	testenv.EventuallyEvery(s.t, "the server to open "+path, patience, 200*time.Millisecond, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), pipelinePatience)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			s.t.Fatalf("GET %s: %v", path, err)
		}
		if r.StatusCode == http.StatusServiceUnavailable {
			r.Body.Close()
			cancel()
			return false
		}
		if r.StatusCode != http.StatusOK {
			cancel()
			s.t.Fatalf("GET %s: %d", path, r.StatusCode)
		}
		// The stream lives until its body is closed; the context ends
		// with the test's patience.
		s.t.Cleanup(cancel)
		res = r
		return true
	})
	return res
}

// awaitEvent reads an open event stream until an event of the given name.
func awaitEvent(res *http.Response, name string) error {
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if sc.Text() == "event: "+name {
			return nil
		}
	}
	return errors.Join(errors.New("the stream ended before "+name), sc.Err())
}
