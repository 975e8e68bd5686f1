package queuestate_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"lightbox/tasks/queuestate"
	"lightbox/testsupport/testenv"
)

// quietLogger keeps Asynq's complaints about a Redis cut off out of the
// test's output.
type quietLogger struct{}

func (quietLogger) Debug(...any) {}
func (quietLogger) Info(...any)  {}
func (quietLogger) Warn(...any)  {}
func (quietLogger) Error(...any) {}
func (quietLogger) Fatal(...any) {}

// Printf quiets go-redis too, which logs every failed dial.
func (quietLogger) Printf(context.Context, string, ...any) {}

func init() { redis.SetLogger(quietLogger{}) }

// doomedServer is a real Asynq server whose only way to Redis is a proxy
// the test cuts: from Redis's side it dies at once, without the shutdown
// that would hand its task back, as a worker killed with SIGKILL does. Its
// handler holds every task until the test ends.
func doomedServer(t *testing.T, env *testenv.Env) (started <-chan string, die func()) {
	t.Helper()
	opt, err := asynq.ParseRedisURI(env.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(env.RedisURL)
	proxy := testenv.NewProxy(t, u.Host)
	cut := opt.(asynq.RedisClientOpt)
	cut.Addr = proxy.Addr
	srv := asynq.NewServer(cut, asynq.Config{Concurrency: 1, Queues: map[string]int{"default": 1},
		Logger: quietLogger{}, ShutdownTimeout: time.Second})
	ch := make(chan string, 1)
	mux := asynq.NewServeMux()
	mux.HandleFunc("hold", func(ctx context.Context, task *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		ch <- id
		<-ctx.Done()
		return ctx.Err()
	})
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return ch, proxy.Down
}

// asynqOf is a client and an inspector of env's Redis, closed when t ends.
func asynqOf(t *testing.T, env *testenv.Env) (*asynq.Client, *asynq.Inspector) {
	t.Helper()
	opt, _ := asynq.ParseRedisURI(env.RedisURL)
	client, in := asynq.NewClient(opt), asynq.NewInspector(opt)
	t.Cleanup(func() { client.Close(); in.Close() })
	return client, in
}

// TestAbandonedTasksAreHandedBackOnceTheirServerIsGone runs a task on a
// server that then dies: while the server lives, its task is listed as
// running and left alone; once its heartbeat has lapsed the task is back
// at the head of its queue with its retry count untouched (Asynq's own
// recovery, a minute or two later, counts a retry), and a live server
// runs it. A task whose servers keep dying with it is handed back
// MaxHandBacks times, then left to Asynq's recovery.
func TestAbandonedTasksAreHandedBackOnceTheirServerIsGone(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	ctx := context.Background()
	client, in := asynqOf(t, env)
	if _, err := client.Enqueue(asynq.NewTask("hold", nil), asynq.TaskID("hold:1"), asynq.MaxRetry(5)); err != nil {
		t.Fatal(err)
	}
	queues := []string{"critical", "default", "low"}

	for death := 1; death <= queuestate.MaxHandBacks+1; death++ {
		started, die := doomedServer(t, env)
		select {
		case <-started:
		case <-time.After(2 * time.Minute):
			t.Fatalf("death %d: the server never started the task", death)
		}
		// The heartbeat that lists the task comes within 5 s of its start.
		testenv.Eventually(t, fmt.Sprintf("death %d: the live server's task to be listed as running", death), 2*time.Minute, func() bool {
			running, err := queuestate.Running(ctx, env.Redis, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			return running["hold:1"]
		})
		if got, err := queuestate.HandBack(ctx, env.Redis, queues, time.Now()); err != nil || len(got) != 0 {
			t.Fatalf("death %d: a live server's task was handed back: %v %v", death, got, err)
		}
		if dead, err := queuestate.DeadServers(ctx, env.Redis, time.Now()); err != nil || len(dead) != 0 {
			t.Fatalf("death %d: live servers taken for dead: %v %v", death, dead, err)
		}

		die()
		// Nothing the dead server wrote changes any more: the test looks
		// at Redis as it will be once the lease has been quiet for Quiet
		// and one more heartbeat, rather than waiting that long.
		later := time.Now().Add(queuestate.Quiet + 5*time.Second)
		got, err := queuestate.HandBack(ctx, env.Redis, queues, later)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].TaskID != "hold:1" || got[0].Queue != "default" {
			t.Fatalf("death %d: handed back %+v, want the held task", death, got)
		}
		info, err := in.GetTaskInfo("default", "hold:1")
		if err != nil {
			t.Fatal(err)
		}
		// Its heartbeat lapsed before its lease went quiet: it is dead,
		// and taken out of the list of servers once.
		if dead, err := queuestate.DeadServers(ctx, env.Redis, later); err != nil || len(dead) != 1 {
			t.Fatalf("death %d: dead servers %v %v, want the one that died", death, dead, err)
		}
		if dead, err := queuestate.DeadServers(ctx, env.Redis, later); err != nil || len(dead) != 0 {
			t.Fatalf("death %d: a second look found dead servers %v %v", death, dead, err)
		}
		if death > queuestate.MaxHandBacks {
			if got[0].Given || info.State != asynq.TaskStateActive {
				t.Fatalf("death %d: a task handed back %d times already was handed back again (%+v, %v)",
					death, queuestate.MaxHandBacks, got[0], info.State)
			}
			break
		}
		if !got[0].Given || info.State != asynq.TaskStatePending || info.Retried != 0 {
			t.Fatalf("death %d: the task is %v with %d retries, want pending with none", death, info.State, info.Retried)
		}
		// Handing back again finds nothing: the same task goes back once.
		if again, err := queuestate.HandBack(ctx, env.Redis, queues, later); err != nil || len(again) != 0 {
			t.Fatalf("death %d: a second look handed back %v %v", death, again, err)
		}
	}
}

// Waiting sees a task ready to run, not one scheduled for later nor one
// in a paused queue.
func TestWaitingSeesTasksReadyToRunOutsidePausedQueues(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	ctx := context.Background()
	client, in := asynqOf(t, env)
	waiting := func(queues ...string) bool {
		t.Helper()
		w, err := queuestate.Waiting(ctx, env.Redis, queues)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	if waiting("low", "default") || waiting() {
		t.Fatal("empty queues hold work")
	}
	if _, err := client.Enqueue(asynq.NewTask("later", nil), asynq.Queue("low"), asynq.ProcessIn(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if waiting("low") {
		t.Fatal("a task scheduled for later counts as ready")
	}
	if _, err := client.Enqueue(asynq.NewTask("now", nil), asynq.Queue("low")); err != nil {
		t.Fatal(err)
	}
	if !waiting("default", "low") || waiting("default") {
		t.Fatal("the task ready in low is not seen there alone")
	}
	if err := in.PauseQueue("low"); err != nil {
		t.Fatal(err)
	}
	if waiting("low") {
		t.Fatal("a paused queue's task counts as ready")
	}
}
