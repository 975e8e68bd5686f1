package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"lightbox/testsupport/testenv"
)

// BenchmarkXMPWrite times `xmp write`'s matching and writing (walk, hash
// every candidate, write and fsync each sidecar) over N photos against the
// baseline measured in the same run on the same files: one SHA-256 after
// another in Go, as sha256sum hashes them. x_baseline is the write's rate
// over the baseline's; the goal is at least 0.8. x_sha256sum is the same
// against the sha256sum command itself, when installed. They alternate
// each round, so all read from the same warm page cache.
//
//	go test -run '^$' -bench BenchmarkXMPWrite -benchtime 5x ./cmd/lightbox
func BenchmarkXMPWrite(b *testing.B) {
	photos, err := filepath.Glob(filepath.Join(testenv.Corpus(b), "photos", "*.jpg"))
	if err != nil || len(photos) == 0 {
		b.Fatalf("no photos in the corpus: %v", err)
	}
	// Copies of the corpus to 2,000 files, as a day's shoot has.
	copies := (2000 + len(photos) - 1) / len(photos)
	dir := b.TempDir()
	var assets []*remoteAsset
	var paths []string
	var size int64
	for c := range copies {
		for i, p := range photos {
			data, err := os.ReadFile(p)
			if err != nil {
				b.Fatal(err)
			}
			// Each copy its own bytes, as every photo of a shoot is.
			data = append(data, fmt.Sprintf("copy %d", c)...)
			name := fmt.Sprintf("IMG_%04d.jpg", c*len(photos)+i)
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, data, 0o644); err != nil {
				b.Fatal(err)
			}
			sum := sha256.Sum256(data)
			hexSum := hex.EncodeToString(sum[:])
			rating := i%5 + 1
			assets = append(assets, &remoteAsset{ID: name, Filename: name, ByteSize: int64(len(data)), Checksum: &hexSum,
				Keywords: []string{"coast"}, MyRating: &remoteRating{Rating: &rating}})
			paths = append(paths, path)
			size += int64(len(data))
		}
	}
	o := xmpOptions{dir: dir, naming: "adobe", pick: "none"}
	sum, _ := exec.LookPath("sha256sum")
	var ours, base, coreutils time.Duration
	buf := make([]byte, 1<<20)
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		for _, p := range paths {
			os.Remove(sidecarPath(p, "adobe"))
		}
		start := time.Now()
		for _, p := range paths {
			f, err := os.Open(p)
			if err != nil {
				b.Fatal(err)
			}
			h := sha256.New()
			if _, err := io.CopyBuffer(h, f, buf); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
		base += time.Since(start)
		if sum != "" {
			start = time.Now()
			if out, err := exec.Command(sum, paths...).CombinedOutput(); err != nil {
				b.Fatalf("sha256sum: %v\n%s", err, out)
			}
			coreutils += time.Since(start)
		}
		b.StartTimer()

		start = time.Now()
		_, tally, err := writePackets(context.Background(), o, assets)
		if err != nil {
			b.Fatal(err)
		}
		ours += time.Since(start)
		if tally.written != len(paths) {
			b.Fatalf("%v, want all %d written", tally, len(paths))
		}
	}
	b.ReportMetric(float64(len(paths)), "photos")
	b.ReportMetric(base.Seconds()/ours.Seconds(), "x_baseline")
	if sum != "" {
		b.ReportMetric(coreutils.Seconds()/ours.Seconds(), "x_sha256sum")
	}
}
