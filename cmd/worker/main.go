// Command worker runs Lightbox's background task processor.
package main

import (
	"fmt"
	"os"

	"lightbox/internal/boot"
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

	blobs, err := boot.Blobs(p.Config)
	if err != nil {
		return err
	}
	w, err := worker.New(worker.Deps{Config: p.Config, Store: p.Store, Blobs: blobs, Logger: p.Log})
	if err != nil {
		return err
	}
	return w.Run(p.Ctx)
}
