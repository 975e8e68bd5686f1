package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"lightbox/testsupport/testenv"
)

// setPassword PATCHes the password of key's gallery id to pw; safe from
// any goroutine.
func setPassword(client *http.Client, base, key, id, pw string) (passwordTry, error) {
	body, _ := json.Marshal(map[string]string{"password": pw})
	req, err := http.NewRequest("PATCH", base+"/v1/galleries/"+id, bytes.NewReader(body))
	if err != nil {
		return passwordTry{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	return sendPassword(client, req)
}

// answers counts password answers by status and code, from any goroutine.
type answers struct {
	mu sync.Mutex
	n  map[string]int
}

func (a *answers) add(r passwordTry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n == nil {
		a.n = map[string]int{}
	}
	a.n[answerKey(r)]++
}

// of is how many answers had status (and code, when one is given).
func (a *answers) of(status int, code string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n[answerKey(passwordTry{status: status, code: code})]
}

// all is how many answers there were.
func (a *answers) all() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, k := range a.n {
		n += k
	}
	return n
}

func (a *answers) String() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return fmt.Sprint(a.n)
}

func answerKey(r passwordTry) string {
	if r.code == "" {
		return strconv.Itoa(r.status)
	}
	return strconv.Itoa(r.status) + " " + r.code
}

// passwordServer is a server process of the test's own, built without
// -race so that a hash costs what it costs in production, with one hash
// slot for viewers, as a 2-core machine has by default.
func passwordServer(t *testing.T) *app {
	env := testenv.New(t)
	srv := startServerProcess(t, env, map[string]string{"TRUSTED_PROXIES": "127.0.0.1/32", "METRICS_TOKEN": testMetricsToken,
		"PASSWORD_HASHES": "1", "LOG_LEVEL": "error"})
	return &app{t: t, env: env, url: "http://" + srv.addr}
}

// typePassword tries pw at the gallery at slug n times from addr, a
// quarter of a second apart as a person typing it again would, and
// returns the answers and how long each took.
func typePassword(t *testing.T, a *app, slug, addr, pw string, n int) (*answers, []time.Duration) {
	client := &http.Client{Timeout: 5 * time.Minute}
	said := &answers{}
	var took []time.Duration
	for range n {
		began := time.Now()
		r, err := tryPassword(client, a.url, slug, addr, pw)
		if err != nil {
			t.Error(err)
		}
		took = append(took, time.Since(began))
		said.add(r)
		time.Sleep(250 * time.Millisecond)
	}
	return said, took
}

// One user sets the password of a gallery of theirs eight times a second,
// each PATCH sent on time whatever became of those before (well within the
// API's rate limit). Meanwhile a viewer of another user's gallery types
// its right password 20 times, and that other user changes the password
// of a gallery of theirs 10 times. A hash holds 64 MiB and a core for a
// fraction of a second; with one slot shared by owners and viewers the
// loop held it nearly all the time, and the viewer was refused 429 busy.
// At least 19 of the viewer's 20 tries must be let in, and all 10 of the
// other user's changes.
func TestOwnerSettingPasswords8ASecondLetsAnotherUsersViewerIn19TimesOf20(t *testing.T) {
	testenv.Alone(t)
	t.Parallel()
	const (
		loopEvery = 125 * time.Millisecond
		tries     = 20
		wantIn    = 19
		changes   = 10
	)
	a := passwordServer(t)
	ana, bob := a.user("ana@example.org", false), a.user("bob@example.org", false)
	anas := a.newGallery(ana, a.newProject(ana), map[string]any{"title": "Ana's proofs"})["id"].(string)
	project := a.newProject(bob)
	slug := a.newGallery(bob, project, map[string]any{"title": "Wedding", "password": "open sesame"})["shareSlug"].(string)
	bobs := a.newGallery(bob, project, map[string]any{"title": "Portraits"})["id"].(string)
	client := &http.Client{Timeout: 5 * time.Minute}

	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	var loop sync.WaitGroup
	anaSaid := &answers{}
	loop.Go(func() {
		var sent sync.WaitGroup
		defer sent.Wait()
		tick := time.NewTicker(loopEvery)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			sent.Go(func() {
				r, err := setPassword(client, a.url, ana, anas, fmt.Sprint("ana's password ", n))
				if err != nil {
					t.Error(err)
				}
				anaSaid.add(r)
			})
		}
	})
	testenv.Eventually(t, "ana's loop to set a password", 3*time.Minute, func() bool { return anaSaid.of(200, "") > 0 })

	began := time.Now()
	var others sync.WaitGroup
	var viewerSaid *answers
	var took []time.Duration
	others.Go(func() { viewerSaid, took = typePassword(t, a, slug, "198.51.100.9", "open sesame", tries) })
	bobSaid := &answers{}
	others.Go(func() {
		for i := range changes {
			r, err := setPassword(client, a.url, bob, bobs, fmt.Sprint("bob's password ", i))
			if err != nil {
				t.Error(err)
			}
			bobSaid.add(r)
		}
	})
	others.Wait()
	stop()
	loop.Wait()

	t.Logf("in %v, ana's loop: %v; the viewer of bob's gallery: %v, %v at most a try; bob's changes: %v",
		time.Since(began).Round(time.Millisecond), anaSaid, viewerSaid, slices.Max(took).Round(time.Millisecond), bobSaid)
	if in := viewerSaid.of(200, ""); in < wantIn {
		t.Errorf("the viewer of another user's gallery was let in %d times of %d (%v) while one user set passwords 8 times a second; want at least %d",
			in, tries, viewerSaid, wantIn)
	}
	if done := bobSaid.of(200, ""); done != changes {
		t.Errorf("another user set a password %d times of %d (%v) while one user set passwords 8 times a second; want all",
			done, changes, bobSaid)
	}
	if n := anaSaid.of(200, "") + anaSaid.of(429, "busy"); n != anaSaid.all() {
		t.Errorf("ana's loop: %v; want 200, or 429 busy for a PATCH past her turn", anaSaid)
	}
}

// The viewers of gallery A ask for it at once and keep asking: 48 clients
// from 16 addresses with A's right password (one shared with a wedding's
// guests, say, or known to whoever floods: a right password is no guess,
// so no turn slows it; only the hash slots do), each waiting as told, but
// never more than a second. Meanwhile a viewer of gallery B, another
// user's, types B's right password 20 times. With the slot going to
// whoever asked when it freed, A's clients held it nearly all the time
// and B's viewer was refused 429 busy. At least 19 of B's 20 tries must
// be let in.
func TestGalleryFloodLetsAnotherGallerysViewerIn19TimesOf20(t *testing.T) {
	testenv.Alone(t)
	t.Parallel()
	const (
		clients   = 48
		addresses = 16
		tries     = 20
		wantIn    = 19
	)
	a := passwordServer(t)
	ana, bob := a.user("ana@example.org", false), a.user("bob@example.org", false)
	flooded := a.newGallery(ana, a.newProject(ana), map[string]any{"title": "Wedding", "password": "open sesame"})["shareSlug"].(string)
	slug := a.newGallery(bob, a.newProject(bob), map[string]any{"title": "Portraits", "password": "let me in"})["shareSlug"].(string)
	refused := func() float64 {
		return testenv.Scrape(t, a.url+"/metrics", "Bearer "+testMetricsToken).Value("lightbox_password_hashes_refused_total", nil)
	}
	before := refused()

	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	var flood sync.WaitGroup
	floodSaid := &answers{}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}, Timeout: 5 * time.Minute}
	for i := range clients {
		flood.Go(func() {
			addr := fmt.Sprintf("203.0.113.%d", i%addresses+1)
			for ctx.Err() == nil {
				r, err := tryPassword(client, a.url, flooded, addr, "open sesame")
				if err != nil {
					t.Error(err)
					return
				}
				floodSaid.add(r)
				select {
				case <-ctx.Done():
				case <-time.After(min(r.retry, time.Second)):
				}
			}
		})
	}
	testenv.Eventually(t, "the flood to fill the hash slot", 3*time.Minute, func() bool { return refused() > before })

	began := time.Now()
	viewerSaid, took := typePassword(t, a, slug, "198.51.100.9", "let me in", tries)
	stop()
	flood.Wait()

	p50, _ := testenv.Percentiles(took)
	t.Logf("in %v, gallery A's flood: %v; B's viewer: %v, %v at most a try (median %v)", time.Since(began).Round(time.Millisecond),
		floodSaid, viewerSaid, slices.Max(took).Round(time.Millisecond), p50.Round(time.Millisecond))
	if in := viewerSaid.of(200, ""); in < wantIn {
		t.Errorf("the viewer of gallery B was let in %d times of %d (%v) while gallery A's viewers flooded it; want at least %d",
			in, tries, viewerSaid, wantIn)
	}
}
