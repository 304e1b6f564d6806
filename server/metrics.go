package server

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// metrics are the server's Prometheus collectors.
type metrics struct {
	requests *prometheus.CounterVec   // by route pattern, method and status
	latency  *prometheus.HistogramVec // request latency by route pattern
	storeOps *prometheus.HistogramVec // store call latency by operation and outcome
	inflight prometheus.Gauge
}

// latencyBuckets span a cached read on loopback (100µs) to a compaction
// waiting on a model (a minute).
var latencyBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// newMetrics registers the collectors on reg. A collector that reg holds
// already (a second Server on one registry) is shared rather than an
// error.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "recall", Subsystem: "http", Name: "requests_total",
			Help: "HTTP requests served, by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "recall", Subsystem: "http", Name: "request_duration_seconds",
			Help:    "Time from a request's arrival to its last byte written, by route pattern.",
			Buckets: latencyBuckets,
		}, []string{"route"}),
		storeOps: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "recall", Subsystem: "store", Name: "operation_duration_seconds",
			Help:    "Latency of the store calls the server makes, by operation and outcome (ok, not_found, conflict, error).",
			Buckets: latencyBuckets,
		}, []string{"op", "outcome"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "recall", Subsystem: "http", Name: "requests_in_flight",
			Help: "Requests being served now.",
		}),
	}
	var err error
	m.requests = register(reg, m.requests, &err)
	m.latency = register(reg, m.latency, &err)
	m.storeOps = register(reg, m.storeOps, &err)
	m.inflight = register(reg, m.inflight, &err)
	if err != nil {
		return nil, errors.Join(ErrBadOptions, err)
	}
	return m, nil
}

// register registers c on reg, or returns the equal collector reg has
// already; a failure is kept in *errp.
func register[C prometheus.Collector](reg prometheus.Registerer, c C, errp *error) C {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if old, ok := are.ExistingCollector.(C); ok {
			return old
		}
	}
	if err != nil && *errp == nil {
		*errp = err
	}
	return c
}

// observe records the latency of one store call.
func (m *metrics) observe(op string, start time.Time, err error) {
	outcome := "ok"
	switch {
	case err == nil:
	case errors.Is(err, recall.ErrNotFound):
		outcome = "not_found"
	case errors.Is(err, recall.ErrConflict):
		outcome = "conflict"
	default:
		outcome = "error"
	}
	m.storeOps.WithLabelValues(op, outcome).Observe(time.Since(start).Seconds())
}

// timedStore is the server's store: every call is timed into
// recall_store_operation_duration_seconds. It unwraps to the store it
// times (see recall.As), so the root package's helpers find every
// optional ability of that store through it; the ones the server's routes
// use (search, fork, cleanup, projects) it also implements, to time them.
type timedStore struct {
	recall.Store
	m *metrics
}

var (
	_ recall.Store           = (*timedStore)(nil)
	_ recall.Searcher        = (*timedStore)(nil)
	_ storekit.Forker        = (*timedStore)(nil)
	_ storekit.Cleaner       = (*timedStore)(nil)
	_ storekit.ProjectLister = (*timedStore)(nil)
	_ storekit.ItemPager     = (*timedStore)(nil)
)

// timed makes one store call, call, and records its latency under op.
func timed[T any](m *metrics, op string, call func() (T, error)) (T, error) {
	start := time.Now()
	v, err := call()
	m.observe(op, start, err)
	return v, err
}

// Unwrap returns the timed store.
func (t *timedStore) Unwrap() recall.Store { return t.Store }

func (t *timedStore) Append(ctx context.Context, key recall.Key, g recall.Guard, es ...recall.Entry) (int64, error) {
	return timed(t.m, "append", func() (int64, error) { return t.Store.Append(ctx, key, g, es...) })
}

func (t *timedStore) Items(ctx context.Context, key recall.Key, limit int) ([]recall.LiveItem, int64, error) {
	start := time.Now()
	items, last, err := t.Store.Items(ctx, key, limit)
	t.m.observe("items", start, err)
	return items, last, err
}

func (t *timedStore) Pop(ctx context.Context, key recall.Key) (recall.Item, error) {
	return timed(t.m, "pop", func() (recall.Item, error) { return t.Store.Pop(ctx, key) })
}

func (t *timedStore) Stat(ctx context.Context, key recall.Key) (recall.Meta, error) {
	return timed(t.m, "stat", func() (recall.Meta, error) { return t.Store.Stat(ctx, key) })
}

func (t *timedStore) Load(ctx context.Context, key recall.Key) (recall.Meta, []recall.Entry, error) {
	start := time.Now()
	m, es, err := t.Store.Load(ctx, key)
	t.m.observe("load", start, err)
	return m, es, err
}

func (t *timedStore) Entries(ctx context.Context, key recall.Key, after int64, limit int) ([]recall.Entry, error) {
	return timed(t.m, "entries", func() ([]recall.Entry, error) { return t.Store.Entries(ctx, key, after, limit) })
}

func (t *timedStore) List(ctx context.Context, project string, opts recall.ListOptions) (recall.Page, error) {
	return timed(t.m, "list", func() (recall.Page, error) { return t.Store.List(ctx, project, opts) })
}

func (t *timedStore) Remove(ctx context.Context, key recall.Key) error {
	start := time.Now()
	err := t.Store.Remove(ctx, key)
	t.m.observe("remove", start, err)
	return err
}

func (t *timedStore) Import(ctx context.Context, key recall.Key, es ...recall.Entry) (int64, error) {
	return timed(t.m, "import", func() (int64, error) { return t.Store.Import(ctx, key, es...) })
}

// Search uses the store's index when it has one (a scan otherwise).
func (t *timedStore) Search(ctx context.Context, opts recall.SearchOptions) (recall.SearchPage, error) {
	return timed(t.m, "search", func() (recall.SearchPage, error) { return recall.Search(ctx, t.Store, opts) })
}

// ReadItems reads the page with the store's own ReadItems when it has one
// (from Items otherwise).
func (t *timedStore) ReadItems(ctx context.Context, key recall.Key, opts recall.ItemPageOptions) (recall.ItemPage, error) {
	return timed(t.m, "read_items", func() (recall.ItemPage, error) { return recall.NewSession(t.Store, key).ReadItems(ctx, opts) })
}

// Fork uses the store's native fork when it has one, and the root
// package's fallback over the store otherwise (timed as one call).
func (t *timedStore) Fork(ctx context.Context, key recall.Key, atSeq int64, newKey recall.Key) (recall.Meta, error) {
	return timed(t.m, "fork", func() (recall.Meta, error) { return recall.NewSession(t.Store, key).Fork(ctx, atSeq, newKey) })
}

// Cleanup is the store's, or the root package's fallback.
func (t *timedStore) Cleanup(ctx context.Context, opts recall.CleanupOptions) (recall.CleanupReport, error) {
	return timed(t.m, "cleanup", func() (recall.CleanupReport, error) { return recall.Cleanup(ctx, t.Store, opts) })
}

// Projects is the store's, or the root package's fallback.
func (t *timedStore) Projects(ctx context.Context) ([]recall.ProjectInfo, error) {
	return timed(t.m, "projects", func() ([]recall.ProjectInfo, error) { return recall.Projects(ctx, t.Store) })
}
