// Command worker runs Lightbox's background task processor.
package main

import (
	"errors"
	"fmt"
	"os"

	"lightbox/chain"
	"lightbox/cmd/boot"
	"lightbox/imaging"
	"lightbox/worker"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

func run() error {
	p, err := boot.Start()
	if err != nil {
		return err
	}
	defer p.Close()
	engine, err := boot.Engine(p.Config)
	if err != nil {
		return err
	}
	embedder, err := boot.Embedder(p.Config)
	if err != nil {
		return err
	}
	finder, err := boot.Faces(p.Config)
	if err != nil {
		return err
	}
	key, err := boot.ChainKey(p.Config)
	if err != nil {
		return err
	}
	ledger, err := boot.Ledger(p.Config)
	if err != nil {
		return err
	}

	w, err := worker.New(worker.Deps{
		Config: p.Config, Store: p.Store, Blobs: p.Blobs, Redis: p.Redis, Logger: p.Log,
		Engine: engine, Embedder: embedder, EmbedRatePerMinute: embedRate(p.Config.EmbedURL, p.Config.EmbedRatePerMin),
		Faces: finder, FacesRatePerMinute: p.Config.FacesRatePerMin,
		Flusher: &chain.Flusher{Store: p.Store, Key: key, Ledger: ledger, Logger: p.Log,
			BatchSize: p.Config.ChainBatchSize, Concurrency: p.Config.ChainParallel},
	})
	if err != nil {
		return err
	}
	err = w.Run(p.Ctx)
	if !errors.Is(err, worker.ErrHandlersRunning) {
		// Not beneath a handler that may still be in libvips.
		imaging.Shutdown()
	}
	return err
}

// embedRate limits only an outside provider; the built-in descriptor runs
// here and costs nothing but CPU.
func embedRate(url string, perMinute int) int {
	if url == "" {
		return 0
	}
	return perMinute
}
