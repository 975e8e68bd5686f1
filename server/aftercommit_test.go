package server_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"lightbox/testsupport/testenv"
)

// hangUp ends a request's context the moment its handler first talks to
// the queue, which every handler below does only once its work is
// committed: the client hanging up right after the commit.
type hangUp struct {
	mu     sync.Mutex
	cancel context.CancelFunc // of the request under way, until it is used
	fired  int
}

// wrap gives each request a context hangUp can end.
func (h *hangUp) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		h.mu.Lock()
		h.cancel = cancel
		h.mu.Unlock()
		next.ServeHTTP(w, r.WithContext(ctx))
		h.mu.Lock()
		h.cancel = nil
		h.mu.Unlock()
	})
}

func (h *hangUp) now() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cancel != nil {
		h.cancel()
		h.cancel = nil
		h.fired++
	}
}

func (h *hangUp) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.fired
}

func (h *hangUp) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *hangUp) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.now()
		return next(ctx, cmd)
	}
}

func (h *hangUp) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.now()
		return next(ctx, cmds)
	}
}

// TestEnqueueAfterCommitOutlivesTheRequest ends each request that records
// jobs right after its commit, as a client that hangs up does: every job
// it recorded has its task in Asynq when the answer comes, not a sweep
// later. No worker runs, so nothing else enqueues them.
func TestEnqueueAfterCommitOutlivesTheRequest(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	hang := &hangUp{}
	opt, err := redis.ParseURL(env.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	rc := redis.NewClient(opt)
	t.Cleanup(func() { rc.Close() })
	rc.AddHook(hang)
	queue := asynq.NewClientFromRedisClient(rc)
	a := startAppWith(t, env, env.Redis, options{queue: queue, wrap: hang.wrap})
	in := inspector(t, env)
	key := a.user("ana@example.org", false)
	project := a.newProject(key)

	// lost lists the project's jobs of type typ whose task Asynq lacks.
	lost := func(typ string) (lost []string, n int) {
		t.Helper()
		var rows []struct {
			Queue  string `db:"queue"`
			TaskID string `db:"task_id"`
		}
		if err := env.DB.Select(&rows, `SELECT queue, task_id FROM jobs WHERE project_id = $1 AND type = $2`, project, typ); err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if _, err := in.GetTaskInfo(r.Queue, r.TaskID); err != nil {
				lost = append(lost, r.TaskID+": "+err.Error())
			}
		}
		return lost, len(rows)
	}
	check := func(what, typ string, r reply, status int) {
		t.Helper()
		expect(t, r, status, "")
		if hang.count() == 0 {
			t.Fatalf("%s: the request never reached the queue", what)
		}
		hang.mu.Lock()
		hang.fired = 0
		hang.mu.Unlock()
		if missing, n := lost(typ); n == 0 || len(missing) > 0 {
			t.Errorf("%s, the client gone right after the commit: %d of %d %s tasks are not in the queue: %v",
				what, len(missing), n, typ, missing)
		}
	}

	ps := corpus(t, "photos/wood.jpg", "photos/dune.jpg")
	ups := a.prepare(key, project, ps)
	sums := make([]string, len(ps))
	for i, u := range ups {
		expect(t, a.put(u.UploadURL, u.Headers, ps[i].data), 201, "")
		sums[i] = ps[i].sum()
	}
	check("finalize", "asset:ingest", a.finalize(key, project, ups, sums), 200)

	check("import", "asset:download", a.do("POST", "/v1/projects/"+project+"/assets:import", key,
		map[string]any{"urls": []string{"https://photos.example.org/a.jpg"}}), 202)

	check("an edit", "edit:apply", a.do("POST", "/v1/assets/"+ups[0].AssetID+"/edits", key,
		map[string]any{"name": "Warm", "params": map[string]any{"exposure": 0.5}}), 201)

	check("an export", "project:export", a.do("POST", "/v1/projects/"+project+"/exports", key,
		map[string]any{"preset": "web"}), 201)

	// Reprocessing records a new job only once the old task is gone.
	if err := in.DeleteTask("default", "ingest:"+ups[1].AssetID); err != nil {
		t.Fatal(err)
	}
	check("reprocess", "asset:ingest", a.do("POST", "/v1/assets/"+ups[1].AssetID+":reprocess", key, nil), 202)

	check("a delete", "asset:delete", a.do("DELETE", "/v1/assets/"+ups[0].AssetID, key, nil), 204)
}
