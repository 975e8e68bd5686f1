package server_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"lightbox/testsupport/procstat"
	"lightbox/testsupport/testenv"
)

// BenchmarkUploadFlow prepares 1,000 files, PUTs 1,000 real photos with 8
// concurrent clients and finalizes them in chunks of 100. Beside the PUT
// throughput it measures plain disk writes of the same bytes in the same
// run (temporary file, fsync, rename, fsync of the folder: as durable as
// the disk backend; 8 writers), and reports the ratio. A second baseline
// PUTs the same bytes to a loopback server that only hashes them, and each
// side reports the machine's CPU time per MiB; put_cpu/hash+disk is ours
// over the two baselines' together.
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
		hashOnly := hashOnlyServer(b)
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
		up := benchUpload(b, a, photos, clients, http.StatusCreated,
			func(i int) error { return plainWrite(dir, i, photos[i].data) },
			func(i int) error { return hashOnlyPut(client, hashOnly, photos[i].data) })
		client.CloseIdleConnections()
		putSecs, prepare, finalize := up.putSecs, up.prepare, up.finalize
		diskSecs, hashSecs := up.baseSecs[0], up.baseSecs[1]

		b.ReportMetric(mb/putSecs, "put_MB/s")
		b.ReportMetric(mb/diskSecs, "disk_MB/s")
		b.ReportMetric((mb/putSecs)/(mb/diskSecs), "put/disk")
		b.ReportMetric(mb/hashSecs, "http_hash_MB/s")
		// What each side costs the machine per MiB (clients and server
		// share its cores here), and how many of its cores were busy.
		b.ReportMetric(up.putCPU.Seconds()*1000/mb, "put_cpu_ms/MB")
		b.ReportMetric(up.baseCPU[0].Seconds()*1000/mb, "disk_cpu_ms/MB")
		b.ReportMetric(up.baseCPU[1].Seconds()*1000/mb, "http_hash_cpu_ms/MB")
		// The goal: a PUT costs at most 1.15× what hashing the bytes over
		// HTTP and writing them durably cost together.
		b.ReportMetric(up.putCPU.Seconds()/(up.baseCPU[0].Seconds()+up.baseCPU[1].Seconds()), "put_cpu/hash+disk")
		b.ReportMetric(up.putCPU.Seconds()/putSecs, "put_busy_cores")
		b.ReportMetric(up.baseCPU[0].Seconds()/diskSecs, "disk_busy_cores")
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

// hashOnlyServer answers PUTs on loopback having only hashed the body with
// SHA-256: the part of an upload no server taking bytes over HTTP and
// checking them can leave out, as a second baseline.
func hashOnlyServer(b *testing.B) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		if _, err := io.CopyBuffer(h, r.Body, make([]byte, 256<<10)); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "%x", h.Sum(nil))
	}))
	b.Cleanup(srv.Close)
	return srv.URL
}

func hashOnlyPut(client *http.Client, url string, data []byte) error {
	req, err := http.NewRequest("PUT", url, bytes.NewReader(data))
	if err != nil {
		return err
	}
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	io.Copy(io.Discard, res.Body)
	if res.StatusCode != http.StatusCreated {
		return fmt.Errorf("hash-only PUT: %s", res.Status)
	}
	return nil
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
	putCPU            time.Duration   // the machine's CPU time in them
	baseSecs          []float64       // each baseline beside them
	baseCPU           []time.Duration // the machine's CPU time in each
	prepare, finalize []time.Duration // each call of 100 files
}

// benchUpload prepares photos on a 100 at a time, PUTs them with clients
// at once, each answered with created, and finalizes them 100 at a time.
// With baselines, the PUTs go in rounds of 100 files, each beside every
// baseline run on the same files by as many writers, each side first in
// turn: on a machine shared with other work all meet the same load, which
// one run after the other does not.
func benchUpload(b *testing.B, a *app, photos []photo, clients, created int, baselines ...func(i int) error) uploadRun {
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
	if len(baselines) > 0 {
		round = chunk
	}
	run.baseSecs = make([]float64, len(baselines))
	run.baseCPU = make([]time.Duration, len(baselines))
	for k, lo := 0, 0; lo < len(ups); k, lo = k+1, lo+round {
		timed := func(secs *float64, cpu *time.Duration, f func(i int) error) {
			start, cpuStart := time.Now(), procstat.MachineCPU()
			parallel(b, clients, round, func(i int) error { return f(lo + i) })
			*secs += time.Since(start).Seconds()
			*cpu += procstat.MachineCPU() - cpuStart
		}
		// Each side goes first in turn.
		for j := range len(baselines) + 1 {
			if side := (j + k) % (len(baselines) + 1); side == 0 {
				timed(&run.putSecs, &run.putCPU, put)
			} else {
				timed(&run.baseSecs[side-1], &run.baseCPU[side-1], baselines[side-1])
			}
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
