// Package telemetry is what the app tells its operators: Prometheus metrics
// of every protection (read from the packages' own counters at scrape
// time, so those packages know nothing of Prometheus), the optional
// METRICS_ADDR listener that keeps scrapes off the public port, and
// OpenTelemetry tracing. It protects against flying blind: a refusal, a
// breaker or a lock that nobody can see, and a dashboard that shows "No
// data" until the first refusal (every refusal series exists at zero).
package telemetry

import (
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/internal/breaker"
)

// Metrics exposes what each protection did. The cache, pools and breakers
// keep their own counters; a collector reads them at scrape time, so the
// packages that do the work know nothing of Prometheus.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.HistogramVec
	refused  *prometheus.CounterVec

	mu     sync.Mutex       // guards counts
	counts map[string]int64 // refusals by "reason/class", for the console
}

// NewMetrics registers the request, refusal, runtime and protection
// metrics; the pools and breakers are named as they are on /metrics.
func NewMetrics(c *cache.Cache, pools []*db.Pool, breakers map[string]func() breaker.Snapshot) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "http_request_duration_seconds",
			Help:    "HTTP request latency by route template, method and status code.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route", "method", "status"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stampede_requests_refused_total",
			Help: "Requests refused before reaching a handler, by reason (shed, rate_limited, concurrency) and priority class.",
		}, []string{"reason", "class"}),
		counts: map[string]int64{},
	}
	// Every refusal series exists at zero from the start: a dashboard's
	// rate() of a series that appears only with the first refusal shows
	// "No data" until then, and misses that first increase.
	for _, reason := range refusalReasons {
		for _, class := range priorityClasses {
			m.refused.WithLabelValues(reason, class)
		}
	}
	m.reg.MustRegister(m.requests, m.refused,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&statsCollector{cache: c, pools: pools, breakers: breakers})
	return m
}

// The label values of stampede_requests_refused_total (routeClasses).
var (
	refusalReasons  = []string{"rate_limited", "shed", "concurrency"}
	priorityClasses = []string{"critical", "normal", "low"}
)

// Register adds the app's own collectors (hot keys, the product
// repository's counters) to the same registry.
func (m *Metrics) Register(cs ...prometheus.Collector) { m.reg.MustRegister(cs...) }

// Handler serves the registry: GET /metrics.
func (m *Metrics) Handler() http.Handler { return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}) }

// Requests is the request latency histogram middleware.Metrics observes.
func (m *Metrics) Requests() *prometheus.HistogramVec { return m.requests }

// RefusedBy counts one request refused before its handler, by reason
// (one of refusalReasons) and priority class.
func (m *Metrics) RefusedBy(reason, class string) {
	m.refused.WithLabelValues(reason, class).Inc()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.counts[reason+"/"+class]++
}

// Refusals is a copy of the refusal counts by "reason/class", for the
// console.
func (m *Metrics) Refusals() map[string]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int64, len(m.counts))
	for k, v := range m.counts {
		out[k] = v
	}
	return out
}

var (
	descCacheResults = prometheus.NewDesc("stampede_cache_results_total",
		"Cache lookups by result: hit (Redis), l1_hit, miss (waited for a load), stale (served while refreshing), negative (cached not-found).", []string{"result"}, nil)
	descLoads       = prometheus.NewDesc("stampede_cache_loads_total", "Loads from the database the cache started, one per key per single-flight; a load the pool then refuses (stampede_db_pool_refused_total) counts too, so this is not a count of queries.", nil, nil)
	descLoadErrors  = prometheus.NewDesc("stampede_cache_load_errors_total", "Loads that failed.", nil, nil)
	descShared      = prometheus.NewDesc("stampede_singleflight_shared_total", "Callers that shared another caller's in-flight load.", nil, nil)
	descLock        = prometheus.NewDesc("stampede_lock_events_total", "Redis lock events: acquired, contended, wait_timeout, lost_during_load.", []string{"event"}, nil)
	descExtensions  = prometheus.NewDesc("stampede_lock_watchdog_extensions_total", "Lock extensions made by the watchdog during long loads.", nil, nil)
	descRefreshes   = prometheus.NewDesc("stampede_cache_refreshes_total", "Background refreshes (SWR, XFetch, refresh-ahead) that took the lock.", nil, nil)
	descCorrupt     = prometheus.NewDesc("stampede_cache_corrupt_total", "Values under a cache key that were not a valid envelope (treated as misses).", nil, nil)
	descRefused     = prometheus.NewDesc("stampede_cache_entries_refused_total", "Genuine cache entries refused and reloaded, by reason: replay (older than a version already seen), out_of_bounds (lifetime beyond the TTLs or past its hard expiry).", []string{"reason"}, nil)
	descFills       = prometheus.NewDesc("stampede_cache_fill_signals_total", "Fill signals heard (any instance's stores under the lock); a signed one also carries the value's version, the floor replays are refused below.", nil, nil)
	descL1Inval     = prometheus.NewDesc("stampede_l1_invalidations_total", "Keys dropped from L1 because another write changed them (pub/sub or Redis CLIENT TRACKING).", nil, nil)
	descInvPending  = prometheus.NewDesc("stampede_cache_invalidations_pending", "Keys whose invalidation Redis did not take, tried again until it does; this instance loads them from the database meanwhile.", nil, nil)
	descInvRetried  = prometheus.NewDesc("stampede_cache_invalidations_retried_total", "Failed invalidations that went through on a later try.", nil, nil)
	descL1Flushes   = prometheus.NewDesc("stampede_l1_flushes_total", "Times L1 was emptied because invalidations may have been missed (tracking connection lost or resubscribed, FLUSHDB).", nil, nil)
	descBreaker     = prometheus.NewDesc("stampede_breaker_state", "Circuit breaker state: 0 closed, 1 half-open, 2 open.", []string{"breaker"}, nil)
	descNextProbe   = prometheus.NewDesc("stampede_breaker_next_probe_seconds", "Seconds until an open breaker's next health probe (0 when closed or while a probe runs).", []string{"breaker"}, nil)
	descProbes      = prometheus.NewDesc("stampede_breaker_probes_total", "Health probes an open breaker ran (SELECT 1 / PING), failed or not.", []string{"breaker"}, nil)
	descProbeFails  = prometheus.NewDesc("stampede_breaker_failed_probes", "Consecutive failed health probes since the breaker opened (each doubles the wait, up to BREAKER_OPEN_MAX).", []string{"breaker"}, nil)
	descPoolConns   = prometheus.NewDesc("stampede_db_pool_connections", "Pool connections by state (acquired, idle, constructing: being dialled, max).", []string{"pool", "state"}, nil)
	descPoolWaiting = prometheus.NewDesc("stampede_db_pool_waiting", "Callers waiting for a connection.", []string{"pool"}, nil)
	descAcquires    = prometheus.NewDesc("stampede_db_pool_acquires_total", "Connections acquired from the pool.", []string{"pool"}, nil)
	descAcquireSecs = prometheus.NewDesc("stampede_db_pool_acquire_wait_seconds_total", "Total time spent waiting for connections.", []string{"pool"}, nil)
	descPoolRefused = prometheus.NewDesc("stampede_db_pool_refused_total", "Calls refused without touching the database, by reason (shed, circuit_open).", []string{"pool", "reason"}, nil)
	descOnFallback  = prometheus.NewDesc("stampede_db_pool_on_fallback", "1 while the pool's new connections go to its fallback server (the reports pool on the primary because DATABASE_READ_URL's replica refused them), else 0.", []string{"pool"}, nil)
	descStmtTimeout = prometheus.NewDesc("stampede_db_statement_timeouts_total", "Statements cancelled by statement_timeout.", []string{"pool"}, nil)
)

// statsCollector turns the counters the packages keep into metrics.
type statsCollector struct {
	cache    *cache.Cache
	pools    []*db.Pool
	breakers map[string]func() breaker.Snapshot
}

func (s *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCacheResults, descLoads, descLoadErrors, descShared, descLock,
		descExtensions, descRefreshes, descCorrupt, descRefused, descFills, descL1Inval, descL1Flushes, descInvPending, descInvRetried, descBreaker, descNextProbe, descProbeFails, descProbes, descPoolConns, descPoolWaiting,
		descAcquires, descAcquireSecs, descStmtTimeout, descPoolRefused, descOnFallback} {
		ch <- d
	}
}

func (s *statsCollector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	st := s.cache.Stats()
	counter(descCacheResults, st.Hits, "hit")
	counter(descCacheResults, st.L1Hits, "l1_hit")
	counter(descCacheResults, st.Misses, "miss")
	counter(descCacheResults, st.Stales, "stale")
	counter(descCacheResults, st.Negatives, "negative")
	counter(descLoads, st.Loads)
	counter(descLoadErrors, st.LoadErrors)
	counter(descShared, st.SharedWaits)
	counter(descLock, st.LockAcquired, "acquired")
	counter(descLock, st.LockContended, "contended")
	counter(descLock, st.LockTimeouts, "wait_timeout")
	counter(descLock, st.LockLost, "lost_during_load")
	counter(descExtensions, st.Extensions)
	counter(descRefreshes, st.Refreshes)
	counter(descCorrupt, st.Corrupt)
	counter(descRefused, st.Replays, "replay")
	counter(descRefused, st.OutOfBounds, "out_of_bounds")
	counter(descFills, st.FillSignals)
	counter(descL1Inval, st.L1Invalidations)
	counter(descL1Flushes, st.L1Flushes)
	gauge(descInvPending, float64(st.InvalidationsPending))
	counter(descInvRetried, st.InvalidationsRetried)
	for name, snapshot := range s.breakers {
		b := snapshot()
		gauge(descBreaker, float64(b.State), name)
		gauge(descNextProbe, b.NextProbeSeconds, name)
		gauge(descProbeFails, float64(b.FailedProbes), name)
		counter(descProbes, b.Probes, name)
	}
	for _, p := range s.pools {
		ps := p.Stat()
		gauge(descPoolConns, float64(ps.AcquiredConns()), p.Name(), "acquired")
		gauge(descPoolConns, float64(ps.IdleConns()), p.Name(), "idle")
		gauge(descPoolConns, float64(ps.ConstructingConns()), p.Name(), "constructing")
		gauge(descPoolConns, float64(ps.MaxConns()), p.Name(), "max")
		gauge(descPoolWaiting, float64(p.Waiting()), p.Name())
		counter(descAcquires, ps.AcquireCount(), p.Name())
		ch <- prometheus.MustNewConstMetric(descAcquireSecs, prometheus.CounterValue, ps.AcquireDuration().Seconds(), p.Name())
		counter(descStmtTimeout, p.StatementTimeouts(), p.Name())
		shed, tripped := p.Refused()
		counter(descPoolRefused, shed, p.Name(), "shed")
		counter(descPoolRefused, tripped, p.Name(), "circuit_open")
		onFallback := 0.0
		if p.OnFallback() {
			onFallback = 1
		}
		gauge(descOnFallback, onFallback, p.Name())
	}
}

// RefusedPayloads counts the cached product payloads that failed
// verification (repo/verify.go), each deleted and reloaded, never served;
// count is the repository's counter (repo.Products.RefusedEntries).
func RefusedPayloads(count func() int64) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "stampede_cache_payloads_refused_total",
		Help: "Cached product payloads refused by verification (not a product, another product's, not canonical, or breaking an invariant) and reloaded.",
	}, func() float64 { return float64(count()) })
}
