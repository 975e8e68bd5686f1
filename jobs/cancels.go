package jobs

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"lightbox/internal/wait"
)

// A project's cancel mark, kept in Redis, lets a worker skip the Postgres
// read of a job's status before it runs the job's task: a job can only be
// canceled in a project that carries the mark, so only those projects'
// tasks pay for the read. Whoever cancels jobs marks their project first,
// and cancels only once the mark is set, so no cancel committed in
// Postgres goes unseen.
//
// Workers remember a project's lack of a mark for markFresh (Marks), so
// tasks need not ask Redis each; a new mark therefore settles for
// markSettle before its first cancel, by which time no remembered answer
// from before it is still believed.
//
// A mark is never removed: it costs a few bytes per project that ever had
// a job canceled, and those projects' tasks simply read as before. A Redis
// restored from a snapshot older than a mark can run a canceled job's task
// once more, which every task already tolerates (at least once).
const (
	markFresh  = 200 * time.Millisecond
	markSettle = 500 * time.Millisecond
)

func cancelMarkKey(project uuid.UUID) string {
	return "lightbox:jobs:cancel-mark:" + project.String()
}

// markScript sets the mark and, when it is new, a key that expires once
// the mark has settled; it answers how many milliseconds remain until then.
var markScript = redis.NewScript(`
if redis.call('SET', KEYS[1], 1, 'NX') then
	redis.call('SET', KEYS[2], 1, 'PX', ARGV[1])
	return tonumber(ARGV[1])
end
local left = redis.call('PTTL', KEYS[2])
if left < 0 then return 0 end
return left`)

// MarkCanceling marks project as one whose jobs may be canceled and returns
// once the mark has settled. Call it before the cancel, and do not cancel
// when it fails.
func MarkCanceling(ctx context.Context, rdb redis.Scripter, project uuid.UUID) error {
	key := cancelMarkKey(project)
	left, err := markScript.Run(ctx, rdb, []string{key, key + ":settling"}, markSettle.Milliseconds()).Int64()
	if err != nil || left <= 0 {
		return err
	}
	// One millisecond more: PTTL rounds down.
	return wait.For(ctx, time.Duration(left+1)*time.Millisecond)
}

// MayBeCanceled reports whether project carries the mark: when it does
// not, none of its jobs has been canceled.
func MayBeCanceled(ctx context.Context, rdb redis.Cmdable, project uuid.UUID) (bool, error) {
	n, err := rdb.Exists(ctx, cancelMarkKey(project)).Result()
	return n > 0, err
}

// Marks answers MayBeCanceled for one process, asking Redis about a
// project at most once per markFresh while it is unmarked, and never
// again once it is marked (a mark stays).
type Marks struct {
	rdb redis.Cmdable

	mu   sync.Mutex
	seen map[uuid.UUID]markSeen
}

// markSeen is what Redis answered about a project, asked at asOf.
type markSeen struct {
	marked bool
	asOf   time.Time
}

// marksKept bounds the projects a Marks remembers; past it, it starts over.
const marksKept = 10_000

// NewMarks returns a Marks that reads rdb.
func NewMarks(rdb redis.Cmdable) *Marks {
	return &Marks{rdb: rdb, seen: map[uuid.UUID]markSeen{}}
}

// MayBeCanceled reports whether project carries the mark, as
// the package function does.
func (m *Marks) MayBeCanceled(ctx context.Context, project uuid.UUID) (bool, error) {
	m.mu.Lock()
	s, ok := m.seen[project]
	m.mu.Unlock()
	if ok && (s.marked || time.Since(s.asOf) < markFresh) {
		return s.marked, nil
	}
	// Taken before asking, so the answer is no older than asOf.
	asOf := time.Now()
	marked, err := MayBeCanceled(ctx, m.rdb, project)
	if err != nil {
		return false, err
	}
	m.mu.Lock()
	if len(m.seen) >= marksKept {
		clear(m.seen)
	}
	if !m.seen[project].marked {
		m.seen[project] = markSeen{marked: marked, asOf: asOf}
	}
	m.mu.Unlock()
	return marked, nil
}
