// Command server runs the Lightbox HTTP API.
package main

import (
	"fmt"
	"os"

	"lightbox/internal/boot"
	"lightbox/server"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

func run() error {
	p, err := boot.Start()
	if err != nil {
		return err
	}
	defer p.Close()
	rdb, err := boot.Redis(p.Config)
	if err != nil {
		return err
	}
	defer rdb.Close()

	srv := server.New(server.Deps{Config: p.Config, Store: p.Store, Redis: rdb, Logger: p.Log})
	return srv.Run(p.Ctx)
}
