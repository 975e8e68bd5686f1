package procs

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"lightbox/testsupport/testenv"
)

// Stack is a set of Lightbox servers and workers sharing what separate
// machines would share: one Postgres, one Redis, one bucket, the upload
// secret and the chain key. Nothing else: each process has its own empty
// DATA_DIR.
type Stack struct {
	// Shared is every process's environment; change it before adding
	// the processes it should apply to.
	Shared  map[string]string
	Servers []*Proc
	Workers []*Proc

	t testing.TB
}

// NewStack shares databaseURL (a DSN that may carry a search_path) and
// redisURL (with its database index) between the processes it starts. The
// blobs live in t's own bucket on the local S3 server; the upload secret
// is given by value and the chain key by file, as an operator would.
func NewStack(t testing.TB, databaseURL, redisURL string) *Stack {
	t.Helper()
	bucket := testenv.S3(t)
	secret := make([]byte, 32)
	rand.Read(secret)
	_, key, _ := ed25519.GenerateKey(nil)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	keyFile := filepath.Join(t.TempDir(), "chain-ed25519.key")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &Stack{t: t, Shared: map[string]string{
		"DATABASE_URL": databaseURL, "REDIS_URL": redisURL,
		"BLOB_BACKEND": "s3", "S3_ENDPOINT": bucket.Endpoint, "S3_REGION": bucket.Region, "S3_BUCKET": bucket.Bucket,
		"S3_ACCESS_KEY_ID": bucket.AccessKeyID, "S3_SECRET_ACCESS_KEY": bucket.SecretAccessKey, "S3_FORCE_PATH_STYLE": "true",
		"UPLOAD_SECRET": hex.EncodeToString(secret), "CHAIN_KEY_FILE": keyFile,
		"LOG_FORMAT": "text", "WORKER_CONCURRENCY": "2", "SHUTDOWN_TIMEOUT": "5s", "CLUSTER_DELAY": "1s",
	}}
}

// AddServer starts one more API server on a free port and waits for its
// /readyz; extra settings override the shared ones.
func (s *Stack) AddServer(extra map[string]string) *Proc {
	s.t.Helper()
	addr := FreeAddr(s.t)
	env := s.env(map[string]string{"HTTP_ADDR": addr, "PUBLIC_URL": "http://" + addr}, extra)
	p := Start(s.t, Options{Name: fmt.Sprintf("server-%d", len(s.Servers)+1), Argv: []string{Binary(s.t, "server")},
		Env: env, URL: "http://" + addr, Ready: "/readyz"})
	s.Servers = append(s.Servers, p)
	return p
}

// AddWorker starts one more worker, serving its metrics on a free port,
// and waits until that port answers.
func (s *Stack) AddWorker(extra map[string]string) *Proc {
	s.t.Helper()
	addr := FreeAddr(s.t)
	env := s.env(map[string]string{"METRICS_ADDR": addr}, extra)
	p := Start(s.t, Options{Name: fmt.Sprintf("worker-%d", len(s.Workers)+1), Argv: []string{Binary(s.t, "worker")},
		Env: env, URL: "http://" + addr, Ready: "/metrics"})
	s.Workers = append(s.Workers, p)
	return p
}

// env is the shared settings, an empty DATA_DIR of the process's own,
// then own and extra on top.
func (s *Stack) env(own, extra map[string]string) map[string]string {
	env := maps.Clone(s.Shared)
	env["DATA_DIR"] = s.t.TempDir()
	maps.Copy(env, own)
	maps.Copy(env, extra)
	return env
}
