package config

import (
	"fmt"
	"time"
)

// HotKeySettings is automatic hot-key detection (HOT_KEY_*): each instance
// counts its own product reads, and a product read at HOT_KEY_THRESHOLD
// per second or more turns hot (HOT_KEYS always are).
type HotKeySettings struct {
	Detect    bool          // HOT_KEY_DETECT
	Threshold float64       // HOT_KEY_THRESHOLD, reads per second per instance
	Top       int           // HOT_KEY_TOP, the most keys hot at once
	L1TTL     time.Duration // HOT_KEY_L1_TTL, L1 TTL of a hot key
	// ReplicaReads (REDIS_REPLICA_READS) lets replicas serve the reads of
	// hot-key copies; only with REDIS_CLUSTER_ADDRS.
	ReplicaReads bool
}

// maxHotKeyTop bounds HOT_KEY_TOP: the detector keeps twice as many
// candidates, and near the int limit that count wrapped negative and
// silently turned detection off. Ten thousand hot keys is far past any
// catalogue's head.
const maxHotKeyTop = 10_000

// readHotKeys reads the HOT_KEY_* settings. HOT_KEY_L1_TTL defaults to four
// times L1_TTL, at most half the soft TTL; like L1_TTL it must stay below
// CACHE_SOFT_TTL, so L1 never hides a refresh.
func readHotKeys(p *envParser, ttls cacheTTLs) HotKeySettings {
	h := HotKeySettings{
		Detect:    p.boolean("HOT_KEY_DETECT", true),
		Threshold: p.float("HOT_KEY_THRESHOLD", 100),
		Top:       p.atMost("HOT_KEY_TOP", p.positive("HOT_KEY_TOP", 16), maxHotKeyTop),
	}
	h.L1TTL = ttls.hotL1 // read with the TTL chain it belongs to (readTTLs)
	if h.L1TTL < 0 {
		h.L1TTL = 0
		if ttls.L1 > 0 {
			h.L1TTL = max(ttls.L1, min(4*ttls.L1, ttls.Soft/2))
		}
	}
	h.ReplicaReads = p.boolean("REDIS_REPLICA_READS", false)
	if h.ReplicaReads && !p.set("REDIS_CLUSTER_ADDRS") {
		p.fail("REDIS_REPLICA_READS", p.getenv("REDIS_REPLICA_READS"), "needs REDIS_CLUSTER_ADDRS: only a Redis Cluster's replicas are found and routed to")
	}
	switch v := p.getenv("HOT_KEY_L1_TTL"); {
	case ttls.hotL1 < 0: // unset, or malformed (said by readTTLs)
	case h.L1TTL >= ttls.Soft:
		p.fail("HOT_KEY_L1_TTL", v, fmt.Sprintf("must be shorter than CACHE_SOFT_TTL (%s, %s): L1 would hide refreshes", ttls.Soft, setOrDerived(ttls.softSet)))
	case h.L1TTL < ttls.L1:
		p.fail("HOT_KEY_L1_TTL", v, fmt.Sprintf("must be at least L1_TTL (%s): a hot key gets a longer L1, not a shorter one", ttls.L1))
	}
	return h
}
