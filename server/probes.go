package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/recallkit/recall"
)

// ops is the state of the middleware and the operational routes.
type ops struct {
	metrics  *metrics
	gatherer prometheus.Gatherer
	limiters *limiters
}

// readyTimeout bounds the store call of /readyz.
const readyTimeout = 2 * time.Second

// readyKey is the key /readyz asks the store about: reserved, never
// written, so the answer is a cheap "not found".
var readyKey = recall.Key{Project: ReservedPrefix + "ready", Session: "probe"}

// init sets up what the middleware needs: the metrics (on
// Options.Registerer, or a registry of the server's own that also has
// the Go and process collectors), the rate limiters, the timed store and
// a logger that tags records with their request's id.
func (s *Server) init(ctx context.Context) error {
	reg, gat := s.opts.Registerer, s.opts.Gatherer
	if reg == nil {
		own := prometheus.NewRegistry()
		own.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		reg = own
		if gat == nil {
			gat = own
		}
	}
	if gat == nil {
		if g, ok := reg.(prometheus.Gatherer); ok {
			gat = g
		} else {
			gat = prometheus.DefaultGatherer
		}
	}
	m, err := newMetrics(reg)
	if err != nil {
		return err
	}
	s.ops = &ops{metrics: m, gatherer: gat, limiters: newLimiters(s.opts.RateLimit, s.opts.Burst)}
	s.store = &timedStore{Store: s.store, m: m}
	s.log = slog.New(ctxLogHandler{s.log.Handler()})
	return nil
}

// opsRoutes registers the probes and the metrics, which need no token.
func (s *Server) opsRoutes() {
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.mux.HandleFunc("GET /readyz", s.api(s.ready))
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.ops.gatherer, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelError)}))
}

// ready answers 200 when the store answers a cheap call within
// readyTimeout, and 503 in the error shape when it does not.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	_, err := s.store.Stat(ctx, readyKey)
	if err != nil && !errors.Is(err, recall.ErrNotFound) {
		s.log.WarnContext(r.Context(), "store not ready", "err", err)
		return &APIError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "store_unavailable",
			Message: "The store does not answer."}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	return nil
}
