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
	"sync"
	"testing"
	"time"

	"lightbox/internal/testenv"
)

// BenchmarkUploadFlow prepares 1,000 files, PUTs 1,000 real photos with 8
// concurrent clients and finalizes them in chunks of 100. Beside the PUT
// throughput it measures plain disk writes of the same bytes in the same
// run (temporary file, fsync, rename; 8 writers), and reports the ratio.
func BenchmarkUploadFlow(b *testing.B) {
	const files, clients, chunk = 1000, 8, 100
	photos := distinctPhotos(b, files)
	var total int64
	for _, p := range photos {
		total += int64(len(p.data))
	}

	for range b.N {
		env := testenv.New(b)
		a := startAppWith(b, env, env.Redis, options{env: map[string]string{
			"RATE_UPLOADS_BURST": "100000", "RATE_API_BURST": "100000",
		}})
		key := a.user("bench@example.org", false)
		project := a.newProject(key)

		var prepare []time.Duration
		var ups []upload
		for i := 0; i < files; i += chunk {
			start := time.Now()
			ups = append(ups, a.prepare(key, project, photos[i:i+chunk])...)
			prepare = append(prepare, time.Since(start))
		}

		start := time.Now()
		parallel(b, clients, len(ups), func(i int) error {
			if r := a.put(ups[i].UploadURL, ups[i].Headers, photos[i].data); r.status != http.StatusCreated {
				return fmt.Errorf("PUT %d: %d %s", i, r.status, r.body)
			}
			return nil
		})
		putSecs := time.Since(start).Seconds()

		dir := b.TempDir()
		start = time.Now()
		parallel(b, clients, len(photos), func(i int) error { return plainWrite(dir, i, photos[i].data) })
		diskSecs := time.Since(start).Seconds()

		var finalize []time.Duration
		for i := 0; i < files; i += chunk {
			sums := make([]string, chunk)
			for k := range sums {
				sums[k] = photos[i+k].sum()
			}
			start := time.Now()
			r := a.finalize(key, project, ups[i:i+chunk], sums)
			finalize = append(finalize, time.Since(start))
			if r.status != 200 || bytes.Count(r.body, []byte(`"status":"uploaded"`)) != chunk {
				b.Fatalf("finalize: %d %s", r.status, r.body[:min(300, len(r.body))])
			}
		}

		mb := float64(total) / (1 << 20)
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

// plainWrite is the baseline: what the disk does with the same bytes when
// written the same durable way, with no HTTP, hashing or database.
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
	return os.Rename(f.Name(), filepath.Join(dir, fmt.Sprint(i)))
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
