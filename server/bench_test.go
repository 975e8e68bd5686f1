package server_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"lightbox/internal/testenv"
)

// BenchmarkUploadFlow prepares 1,000 files, PUTs 1,000 real photos with 8
// concurrent clients and finalizes them in chunks of 100. Beside the PUT
// throughput it measures plain disk writes of the same bytes in the same
// run (temporary file, fsync, rename, fsync of the folder: as durable as
// the disk backend; 8 writers), and reports the ratio.
// LIGHTBOX_BENCH_UPLOADS sets the number of files (a multiple of 100) for a
// quicker look.
func BenchmarkUploadFlow(b *testing.B) {
	const clients = 8
	files := 1000
	if n, err := strconv.Atoi(os.Getenv("LIGHTBOX_BENCH_UPLOADS")); err == nil && n > 0 {
		files = (n + 99) / 100 * 100
	}
	photos := distinctPhotos(b, files)
	mb := megabytes(photos)

	for range b.N {
		env := testenv.New(b)
		a := startAppWith(b, env, env.Redis, options{env: map[string]string{
			"RATE_UPLOADS_BURST": "100000", "RATE_API_BURST": "100000",
		}})
		dir := b.TempDir()
		up := benchUpload(b, a, photos, clients, http.StatusCreated, func(i int) error { return plainWrite(dir, i, photos[i].data) })
		putSecs, diskSecs, prepare, finalize := up.putSecs, up.baseSecs, up.prepare, up.finalize

		b.ReportMetric(mb/putSecs, "put_MB/s")
		b.ReportMetric(mb/diskSecs, "disk_MB/s")
		b.ReportMetric((mb/putSecs)/(mb/diskSecs), "put/disk")
		b.ReportMetric(ms(percentile(prepare, 50)), "prepare100_p50_ms")
		b.ReportMetric(ms(percentile(prepare, 99)), "prepare100_p99_ms")
		b.ReportMetric(ms(percentile(finalize, 50)), "finalize100_p50_ms")
		b.ReportMetric(ms(percentile(finalize, 99)), "finalize100_p99_ms")
	}
}

// distinctPhotos cycles the corpus photos, making each copy distinct by
// bytes after the JPEG end marker, which decoders ignore.
func distinctPhotos(b *testing.B, n int) []photo {
	dir := filepath.Join(testenv.Corpus(b), "photos")
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var base []photo
	for _, e := range entries {
		base = append(base, corpus(b, filepath.Join("photos", e.Name()))...)
	}
	out := make([]photo, n)
	for i := range out {
		p := base[i%len(base)]
		tag := make([]byte, 16)
		rand.Read(tag)
		out[i] = photo{name: fmt.Sprintf("%04d-%s", i, p.name), data: append(bytes.Clone(p.data), []byte(hex.EncodeToString(tag))...)}
	}
	return out
}

// megabytes is the size of photos in MiB.
func megabytes(photos []photo) float64 {
	var total int
	for _, p := range photos {
		total += len(p.data)
	}
	return float64(total) / (1 << 20)
}

// plainWrite is the baseline: what the disk does with the same bytes when
// written the same durable way as the disk backend (the file synced, then
// renamed into place, then the folder synced so the rename lasts), with no
// HTTP, hashing or database.
func plainWrite(dir string, i int, data []byte) error {
	f, err := os.CreateTemp(dir, ".w-*")
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	f.Close()
	if err := os.Rename(f.Name(), filepath.Join(dir, fmt.Sprint(i))); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func parallel(b *testing.B, workers, n int, f func(i int) error) {
	next := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					once.Do(func() { first = err })
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		b.Fatal(first)
	}
}

func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// uploadRun is what benchUpload measured.
type uploadRun struct {
	putSecs           float64         // all the PUTs
	baseSecs          float64         // the baseline beside them
	prepare, finalize []time.Duration // each call of 100 files
}

// benchUpload prepares photos on a 100 at a time, PUTs them with clients
// at once, each answered with created, and finalizes them 100 at a time.
// With a baseline, the PUTs go in rounds of 100 files, each beside the
// baseline run on the same files by as many writers, one first and then
// the other in turn: on a machine shared with other work both meet the
// same load, which one run after the other does not.
func benchUpload(b *testing.B, a *app, photos []photo, clients, created int, baseline func(i int) error) uploadRun {
	const chunk = 100
	key := a.user("bench@example.org", false)
	project := a.newProject(key)
	var run uploadRun
	var ups []upload
	for i := 0; i < len(photos); i += chunk {
		start := time.Now()
		ups = append(ups, a.prepare(key, project, photos[i:i+chunk])...)
		run.prepare = append(run.prepare, time.Since(start))
	}
	// Each client keeps its connection, as a browser does; Go's default
	// client keeps two per host, so the others would connect again for
	// every file.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	defer client.CloseIdleConnections()
	put := func(i int) error {
		if r := a.putWith(client, ups[i].UploadURL, ups[i].Headers, photos[i].data); r.status != created {
			return fmt.Errorf("PUT %d: %d %s", i, r.status, r.body)
		}
		return nil
	}
	round := len(ups)
	if baseline != nil {
		round = chunk
	}
	for k, lo := 0, 0; lo < len(ups); k, lo = k+1, lo+round {
		timed := func(secs *float64, f func(i int) error) {
			start := time.Now()
			parallel(b, clients, round, func(i int) error { return f(lo + i) })
			*secs += time.Since(start).Seconds()
		}
		if baseline != nil && k%2 == 1 {
			timed(&run.baseSecs, baseline)
		}
		timed(&run.putSecs, put)
		if baseline != nil && k%2 == 0 {
			timed(&run.baseSecs, baseline)
		}
	}
	for i := 0; i < len(photos); i += chunk {
		sums := make([]string, chunk)
		for k := range sums {
			sums[k] = photos[i+k].sum()
		}
		start := time.Now()
		r := a.finalize(key, project, ups[i:i+chunk], sums)
		run.finalize = append(run.finalize, time.Since(start))
		if r.status != 200 || bytes.Count(r.body, []byte(`"status":"uploaded"`)) != chunk {
			b.Fatalf("finalize: %d %s", r.status, r.body[:min(300, len(r.body))])
		}
	}
	return run
}
