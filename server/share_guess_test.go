package server_test

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/crypto/argon2"

	"lightbox/testsupport/procstat"
	"lightbox/testsupport/testenv"
)

// lightHash is an argon2id hash of pw in the form the server stores, with
// 8 MiB where the server's own take 64: the server checks a hash with the
// parameters it names, so the tests about counting tries run lighter (and
// under -race) without changing what is counted.
func lightHash(pw string) string {
	const memKiB, passes, lanes = 8 << 10, 3, 2
	salt := []byte("lightbox-test-salt")
	key := argon2.IDKey([]byte(pw), salt, passes, memKiB, lanes, 32)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, memKiB, passes, lanes,
		b64.EncodeToString(salt), b64.EncodeToString(key))
}

// lightGallery is a gallery whose password is pw, stored as lightHash.
func (a *app) lightGallery(key, project, pw string) (id, slug string) {
	a.t.Helper()
	g := a.newGallery(key, project, map[string]any{"title": "Proofs"})
	id, slug = g["id"].(string), g["shareSlug"].(string)
	a.env.DB.MustExec(`UPDATE galleries SET password_hash = $2 WHERE id = $1`, id, lightHash(pw))
	return id, slug
}

// passwordHashes is how many password hashes the server started.
func (a *app) passwordHashes() float64 {
	a.t.Helper()
	m := testenv.Scrape(a.t, a.url+"/metrics", "Bearer "+testMetricsToken)
	if !m.Has("lightbox_password_hashes_total") {
		a.t.Error("the server does not count its password hashes (lightbox_password_hashes_total)")
	}
	return m.Value("lightbox_password_hashes_total", nil)
}

// Thirty wrong passwords at once from one address, at a server process
// of its own with hash slots to spare: the address's ten are checked, the
// other twenty refused without a hash; then the right password from that
// address is refused too, without a hash. The hashes are counted twice:
// by the server's metric, and by the CPU time the server spent, against
// what ten wrong passwords at once from ten addresses (ten hashes side by
// side) cost it in the same run, at another gallery, once the server is
// warm.
func TestThirtyPasswordsAtOnceFromOneAddressRunAtMostTenHashes(t *testing.T) {
	testenv.Alone(t)
	env := testenv.New(t)
	srv := startServerProcess(t, env, map[string]string{"TRUSTED_PROXIES": "127.0.0.1/32", "METRICS_TOKEN": testMetricsToken,
		"PASSWORD_HASHES": "32", "LOG_LEVEL": "error"})
	a := &app{t: t, env: env, url: "http://" + srv.addr}
	key := a.user("ana@example.org", false)
	project := a.newProject(key)
	slug := a.newGallery(key, project, map[string]any{"title": "Proofs", "password": "open sesame"})["shareSlug"].(string)
	other := a.newGallery(key, project, map[string]any{"title": "Other", "password": "open sesame"})["shareSlug"].(string)
	// burst sends n wrong passwords at once to the gallery at slug, the
	// i-th from addr(i), and returns the answers' codes and the CPU the
	// server spent.
	burst := func(slug string, n int, addr func(int) string) (map[string]int, time.Duration) {
		cpu := procstat.CPU(srv.pid)
		var wg sync.WaitGroup
		var mu sync.Mutex
		codes := map[string]int{}
		for i := range n {
			wg.Go(func() {
				r, err := tryPassword(http.DefaultClient, a.url, slug, addr(i), fmt.Sprintf("guess %d", i))
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				codes[r.code]++
				mu.Unlock()
			})
		}
		wg.Wait()
		return codes, procstat.CPU(srv.pid) - cpu
	}
	burst(other, 10, func(i int) string { return fmt.Sprintf("198.18.0.%d", i+1) })
	_, tenHashes := burst(other, 10, func(i int) string { return fmt.Sprintf("198.18.1.%d", i+1) })
	before := a.passwordHashes()
	codes, spent := burst(slug, 30, func(int) string { return "203.0.113.7" })
	hashed := a.passwordHashes() - before
	t.Logf("30 tries at once from one address: %v; %v hashes, %v of CPU where 10 hashes at once took %v", codes, hashed, spent, tenHashes)
	if hashed > 10 {
		t.Errorf("%v hashes ran for 30 tries at once from one address; want at most 10", hashed)
	}
	if limit := tenHashes * 3 / 2; spent > limit {
		t.Errorf("30 tries at once from one address took %v of the server's CPU, over %v (15 hashes): more than 10 were hashed", spent, limit)
	}
	// The ten checked: nine wrong, and the tenth locks the address.
	if codes["wrong_password"] != 9 || codes["too_many_attempts"] != 21 {
		t.Errorf("answers %v; want 9 wrong_password and 21 too_many_attempts", codes)
	}
	before = a.passwordHashes()
	r, err := tryPassword(http.DefaultClient, a.url, slug, "203.0.113.7", "open sesame")
	if err != nil || r.status != 429 || r.code != "too_many_attempts" || r.retry < 14*time.Minute {
		t.Fatalf("the right password from the locked address: %+v, %v", r, err)
	}
	if n := a.passwordHashes() - before; n != 0 {
		t.Errorf("the locked address's try ran %v hashes", n)
	}
	// Another address is not locked out.
	if r, _ := tryPassword(http.DefaultClient, a.url, slug, "198.51.100.9", "open sesame"); r.status != 200 {
		t.Fatalf("the right password from another address: %+v", r)
	}
}

// A gallery tried from eight addresses at once, and on and on: past its
// free tries each guess waits for a turn, turns at least a second apart,
// and its client, from an address of its own, is slowed, not locked out.
func TestGalleryTriedFromManyAddressesSlowsGuessesButLetsItsClientIn(t *testing.T) {
	a := appWithEnv(t, "TRUSTED_PROXIES", "127.0.0.1/32", "METRICS_TOKEN", testMetricsToken, "PASSWORD_HASHES", "64")
	key := a.user("ana@example.org", false)
	_, slug := a.lightGallery(key, a.newProject(key), "open sesame")
	const addresses = 8
	addr := func(i int) string { return fmt.Sprintf("203.0.113.%d", i+1) }
	start := time.Now()
	before := a.passwordHashes()

	// The burst: 32 wrong passwords at once, four from each address.
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			if _, err := tryPassword(http.DefaultClient, a.url, slug, addr(i%addresses), fmt.Sprintf("burst %d", i)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()

	// Then each address keeps guessing, waiting as told, until the client is in.
	done, queued := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var queuedOnce sync.Once
	codes := map[string]int{}
	var attackers sync.WaitGroup
	for i := range addresses {
		attackers.Go(func() {
			for n := 0; ; n++ {
				r, err := tryPassword(http.DefaultClient, a.url, slug, addr(i), fmt.Sprintf("guess %d-%d", i, n))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				codes[r.code]++
				mu.Unlock()
				if r.code == "slow_down" && r.retry >= 4*time.Second {
					queuedOnce.Do(func() { close(queued) })
				}
				if r.code == "too_many_attempts" { // this address is spent
					return
				}
				select {
				case <-done:
					return
				case <-time.After(r.retry):
				}
			}
		})
	}
	// The client comes once the attackers hold turns seconds ahead; should
	// no turn ever be handed out, once the attack is over.
	attackOver := make(chan struct{})
	go func() { attackers.Wait(); close(attackOver) }()
	select {
	case <-queued:
	case <-attackOver:
	case <-time.After(3 * time.Minute):
		t.Fatal("timed out waiting for the attack to queue up")
	}
	var waits []time.Duration
	clientStart := time.Now()
	for {
		r, err := tryPassword(http.DefaultClient, a.url, slug, "198.51.100.77", "open sesame")
		if err != nil {
			t.Fatal(err)
		}
		if r.status == 200 {
			break
		}
		if r.code != "slow_down" {
			t.Fatalf("the client's right password: %+v; want 200, or 429 slow_down", r)
		}
		if time.Since(clientStart) > 3*time.Minute {
			t.Fatalf("the client is still waiting after %v: locked out", time.Since(clientStart))
		}
		waits = append(waits, r.retry)
		time.Sleep(r.retry)
	}
	clientWait := time.Since(clientStart)
	close(done)
	attackers.Wait()
	elapsed := time.Since(start)
	hashed := a.passwordHashes() - before
	t.Logf("the client got in after %v (told to wait %v); the attack: %v; %v hashes in %v", clientWait.Round(time.Millisecond),
		waits, codes, hashed, elapsed.Round(time.Millisecond))
	if len(waits) == 0 {
		t.Error("the client's password was checked at once: tries at a gallery under attack are not slowed")
	}
	// 30 free tries, then turns a second or more apart (and the client's own).
	if limit := 30 + 1 + elapsed.Seconds(); hashed > limit {
		t.Errorf("%v hashes in %v; want at most %.0f: 30 free, then one a second", hashed, elapsed, limit)
	}
}

// With Redis down no try can be counted, so none is checked: 503, and no
// hash runs.
func TestSharePasswordsAreNotCheckedUncounted(t *testing.T) {
	env := testenv.New(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := ln.Addr().String()
	ln.Close()
	down := redis.NewClient(&redis.Options{Addr: nobody, MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { down.Close() })
	a := startAppWith(t, env, down, options{env: map[string]string{"METRICS_TOKEN": testMetricsToken}})
	key := a.user("ana@example.org", false)
	_, slug := a.lightGallery(key, a.newProject(key), "open sesame")
	before := a.passwordHashes()
	expect(t, a.viewer("POST", slug, "/auth", "", map[string]any{"password": "open sesame"}), 503, "password_check_unavailable")
	if n := a.passwordHashes() - before; n != 0 {
		t.Errorf("%v hashes ran for tries nobody counted", n)
	}
}
