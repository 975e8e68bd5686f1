// Package metrics provides what the server and the worker share to expose
// Prometheus metrics: a registry with the process's own collectors, its
// scrape handler, the METRICS_TOKEN check and a listener for a process with
// no API of its own.
package metrics

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewRegistry is a registry holding the Go runtime's and the process's
// collectors. Each server or worker has its own, so that several can live
// in one test process.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Handler answers a scrape of reg in the Prometheus text format. A collector
// that fails is reported in the answer's own metrics rather than failing the
// scrape, so one slow dependency does not hide the rest.
func Handler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, Registry: reg})
}

// TokenMatches reports whether an Authorization header carries token as its
// Bearer credential, in constant time. An empty token matches nothing.
func TokenMatches(authorization, token string) bool {
	scheme, got, _ := strings.Cut(strings.TrimSpace(authorization), " ")
	return strings.EqualFold(scheme, "Bearer") && token != "" && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) == 1
}

// Protect lets through only requests that carry token, when there is one.
func Protect(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !TokenMatches(r.Header.Get("Authorization"), token) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			http.Error(w, "metrics need Authorization: Bearer <METRICS_TOKEN>", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Serve answers GET /metrics with h on ln until ctx ends, then closes ln.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, log *slog.Logger) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(stop)
	}()
	log.Info("metrics listening", "addr", ln.Addr().String())
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		<-stopped
		return nil
	}
	return err
}
