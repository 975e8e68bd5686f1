// Command server runs the Lightbox HTTP API.
package main

import (
	"fmt"
	"os"

	"github.com/hibiken/asynq"

	"lightbox/cmd/boot"
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

	queue := asynq.NewClient(p.Queue)
	defer queue.Close()
	inspector := asynq.NewInspector(p.Queue)
	defer inspector.Close()
	chainKeys, err := boot.ChainKeys(p.Config)
	if err != nil {
		return err
	}
	embedder, err := boot.Embedder(p.Config)
	if err != nil {
		return err
	}
	texts, err := boot.TextEmbedder(p.Config)
	if err != nil {
		return err
	}

	srv := server.New(server.Deps{
		Config: p.Config, Store: p.Store, Redis: p.Redis, Queue: queue, Inspector: inspector, Logger: p.Log,
		Blobs: p.Blobs, Signer: p.URLs,
		ChainKeys: chainKeys, EmbedModel: embedder.Model(),
		TextEmbedder: texts,
	})
	return srv.Run(p.Ctx)
}
