package app

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/hotkeys"
	"github.com/stampede-guard/api/internal/redisconn"
	"github.com/stampede-guard/api/repo"
)

// hotKeySettings is automatic hot-key detection (HOT_KEY_*): each instance
// counts its own product reads, and a product read at HOT_KEY_THRESHOLD
// per second or more turns hot (HOT_KEYS always are).
type hotKeySettings struct {
	Detect    bool          // HOT_KEY_DETECT
	Threshold float64       // HOT_KEY_THRESHOLD, reads per second per instance
	Top       int           // HOT_KEY_TOP, the most keys hot at once
	L1TTL     time.Duration // HOT_KEY_L1_TTL, L1 TTL of a hot key
	// ReplicaReads (REDIS_REPLICA_READS) lets replicas serve the reads of
	// hot-key copies; only with REDIS_CLUSTER_ADDRS.
	ReplicaReads bool
}

// readHotKeys reads the HOT_KEY_* settings. HOT_KEY_L1_TTL defaults to four
// times L1_TTL, at most half the soft TTL; like L1_TTL it must stay below
// CACHE_SOFT_TTL, so L1 never hides a refresh.
func readHotKeys(p *envParser, ttls cacheTTLs) hotKeySettings {
	h := hotKeySettings{
		Detect:    p.boolean("HOT_KEY_DETECT", true),
		Threshold: p.float("HOT_KEY_THRESHOLD", 100),
		Top:       p.positive("HOT_KEY_TOP", 16),
	}
	def := time.Duration(0)
	if ttls.L1 > 0 {
		def = max(ttls.L1, min(4*ttls.L1, ttls.Soft/2))
	}
	h.L1TTL = p.durationOrZero("HOT_KEY_L1_TTL", def)
	h.ReplicaReads = p.boolean("REDIS_REPLICA_READS", false)
	if h.ReplicaReads && !p.set("REDIS_CLUSTER_ADDRS") {
		p.fail("REDIS_REPLICA_READS", p.getenv("REDIS_REPLICA_READS"), "needs REDIS_CLUSTER_ADDRS: only a Redis Cluster's replicas are found and routed to")
	}
	switch v := p.getenv("HOT_KEY_L1_TTL"); {
	case !p.set("HOT_KEY_L1_TTL"):
	case h.L1TTL >= ttls.Soft:
		p.fail("HOT_KEY_L1_TTL", v, fmt.Sprintf("must be shorter than CACHE_SOFT_TTL (%s): L1 would hide refreshes", ttls.Soft))
	case h.L1TTL < ttls.L1:
		p.fail("HOT_KEY_L1_TTL", v, fmt.Sprintf("must be at least L1_TTL (%s): a hot key gets a longer L1, not a shorter one", ttls.L1))
	}
	return h
}

// newHotKeys starts the detector, or returns nil with HOT_KEY_DETECT=false.
func newHotKeys(cfg config) *hotkeys.Detector {
	if !cfg.HotKey.Detect {
		return nil
	}
	return hotkeys.New(hotkeys.Config{
		Threshold: cfg.HotKey.Threshold, Top: cfg.HotKey.Top, Pinned: repo.Keys(cfg.HotKeys),
	})
}

// hotSet is what the cache asks about hot keys: nil (every key gets
// copies, as before detection) when detection is off. A nil *Detector in
// the interface would not be nil.
func hotSet(d *hotkeys.Detector) cache.HotSet {
	if d == nil {
		return nil
	}
	return d
}

// hotKeyRates lists the heaviest keys for the console; empty when off.
func hotKeyRates(d *hotkeys.Detector) []hotkeys.Rate {
	if d == nil {
		return []hotkeys.Rate{}
	}
	return d.Top()
}

// newReplicaReads is the client of hot-key copy reads with
// REDIS_REPLICA_READS (redisconn.ReplicaReads); nil unless enabled on a
// cluster.
func newReplicaReads(cfg config, rdb redis.UniversalClient, b *redisconn.Breaker) *redis.ClusterClient {
	if !cfg.HotKey.ReplicaReads {
		return nil
	}
	return redisconn.ReplicaReads(rdb, b)
}

// replicaReads is newReplicaReads' client as the cache takes it: a nil
// *ClusterClient in the interface would not be nil.
func replicaReads(rc *redis.ClusterClient) redis.UniversalClient {
	if rc == nil {
		return nil
	}
	return rc
}

var (
	descHotKeys   = prometheus.NewDesc("stampede_hot_keys", "Keys hot on this instance now (detected, or pinned by HOT_KEYS): they use HOT_KEY_COPIES and HOT_KEY_L1_TTL.", nil, nil)
	descHotKeyRPS = prometheus.NewDesc("stampede_hot_key_reads_per_second", "Reads per second over the last detection window of the heaviest keys, at most HOT_KEY_TOP of them (bounded cardinality); hot says whether the key is hot.", []string{"key", "hot"}, nil)
)

// hotKeysCollector exports the detector's state at scrape time: label sets
// of keys that left the top K disappear with them.
type hotKeysCollector struct{ d *hotkeys.Detector }

func (h hotKeysCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descHotKeys
	ch <- descHotKeyRPS
}

func (h hotKeysCollector) Collect(ch chan<- prometheus.Metric) {
	if h.d == nil {
		ch <- prometheus.MustNewConstMetric(descHotKeys, prometheus.GaugeValue, 0)
		return
	}
	for _, r := range h.d.Top() {
		ch <- prometheus.MustNewConstMetric(descHotKeyRPS, prometheus.GaugeValue, r.PerSecond, r.Key, fmt.Sprint(r.Hot))
	}
	ch <- prometheus.MustNewConstMetric(descHotKeys, prometheus.GaugeValue, float64(h.d.HotCount()))
}
