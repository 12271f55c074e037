package app

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/config"
	"github.com/stampede-guard/api/internal/hotkeys"
	"github.com/stampede-guard/api/internal/redisconn"
	"github.com/stampede-guard/api/repo"
)

// newHotKeys starts the detector, or returns nil with HOT_KEY_DETECT=false.
func newHotKeys(cfg config.Config) *hotkeys.Detector {
	if !cfg.HotKey.Detect {
		return nil
	}
	return hotkeys.New(hotkeys.Config{
		Threshold: cfg.HotKey.Threshold, Top: cfg.HotKey.Top, Pinned: repo.Keys(cfg.WarmKeys),
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

// newReplicaReads is the client of hot-key copy reads with
// REDIS_REPLICA_READS (redisconn.ReplicaReads); nil unless enabled on a
// cluster.
func newReplicaReads(cfg config.Config, rdb redis.UniversalClient, b *redisconn.Breaker) *redis.ClusterClient {
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
