package cache

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
)

// Mode picks how much protection a miss gets.
type Mode string

// The modes, from none to all. Each includes the one before it, except that
// swr and xfetch are two alternative ways to refresh before users wait.
const (
	ModeNaive        Mode = "naive"        // plain cache-aside: every miss queries
	ModeSingleflight Mode = "singleflight" // one load per key per process
	ModeLock         Mode = "lock"         // + one load per key across instances
	ModeSWR          Mode = "swr"          // + serve stale, refresh in background
	ModeXFetch       Mode = "xfetch"       // + probabilistic early refresh
)

// locks reports whether the mode takes the Redis lock on a miss.
func (m Mode) locks() bool { return m == ModeLock || m == ModeSWR || m == ModeXFetch }

// ParseMode validates a mode name.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeNaive, ModeSingleflight, ModeLock, ModeSWR, ModeXFetch:
		return m, nil
	}
	return "", fmt.Errorf("unknown cache mode %q (want naive, singleflight, lock, swr or xfetch)", s)
}

// Waiter is what a request does while another instance loads its key.
type Waiter int

const (
	// WaiterWait polls the cache (backoff with jitter) until LockWait, then
	// gives up with ErrLockTimeout.
	WaiterWait Waiter = iota
	// WaiterFail gives up at once with ErrLockTimeout: answer "retry soon"
	// rather than hold a request.
	WaiterFail
	// WaiterLoad polls like WaiterWait and, when the wait ends, loads the
	// value itself through the per-instance cap on direct loads: a dead or
	// slow holder costs at most one extra query per instance, not an error.
	WaiterLoad
)

// ParseWaiter reads "wait", "fail" or "load".
func ParseWaiter(s string) (Waiter, error) {
	switch s {
	case "wait", "":
		return WaiterWait, nil
	case "fail":
		return WaiterFail, nil
	case "load":
		return WaiterLoad, nil
	}
	return 0, fmt.Errorf("unknown waiter %q (want wait, fail or load)", s)
}

// WatchdogMode says whether a load extends its lock while it runs. The
// zero value keeps the watchdog on: turning it off is for showing what it
// prevents (a load outliving its lock costs a second query).
type WatchdogMode int

const (
	// WatchdogOn extends the lock every LockTTL/3 while its load runs.
	WatchdogOn WatchdogMode = iota
	// WatchdogOff lets a load outlive its lock; the fenced write then
	// stores nothing.
	WatchdogOff
)

// Config tunes a Cache. Zero values take the documented defaults.
type Config struct {
	Mode        Mode          // default swr
	TTL         time.Duration // hard TTL (Redis expiry); default 10 minutes
	SoftTTL     time.Duration // freshness for swr; default 30 seconds
	NegativeTTL time.Duration // TTL of a cached "absent"; default 30 seconds
	LockTTL     time.Duration // lock expiry; default 5 seconds
	LockWait    time.Duration // how long a waiter polls; default 2 seconds
	// Waiter says what a request does when another instance holds the
	// lock: poll until LockWait (default), fail at once, or poll and then
	// load the value itself. Serving stale instead is what ModeSWR does
	// before anyone waits.
	Waiter Waiter
	// LoadTimeout bounds one load, counted from the moment it may start
	// (for the lock path: once it holds the lock, so time spent waiting
	// for a dead holder's lock to expire does not eat into it); default
	// LockTTL.
	LoadTimeout time.Duration
	// Admit, when set, is asked before a miss is loaded (before the lock,
	// the double-check and the load): an error is returned at once, so a
	// load the source would refuse anyway (a saturated pool, an open
	// breaker) costs no Redis round trip. When it admits, it holds the
	// load's place at the source (db.Pool.Claim): the load runs under the
	// ctx it returns, and release is called when the load ends, or as soon
	// as another instance holds the key's lock (this load then waits for
	// that one's value instead of reaching the source). Joiners of a load
	// already running in this process are not asked.
	Admit func(ctx context.Context) (actx context.Context, release func(), err error)
	// Watchdog says whether a load holding the lock extends it while it
	// runs; the zero value, WatchdogOn, does.
	Watchdog   WatchdogMode
	XFetchBeta float64       // > 1 refreshes earlier; default 1
	L1TTL      time.Duration // 0 disables the in-process cache
	L1Size     int           // default 10 000 entries
	// TTLJitter shortens each entry's (and each copy's) expiry by a random
	// fraction of at most this much (0.1 = up to 10 %), so keys written
	// together expire apart; 0 turns it off. At most 0.5.
	TTLJitter float64
	// Copies of each entry kept under different hash slots (1 = off):
	// of every key, or, with Hot set, of the keys hot right now.
	Copies int
	// Hot, when set, picks the keys that use copies and HotL1TTL; nil
	// treats every key as hot for copies and none for HotL1TTL. See HotSet.
	Hot HotSet
	// HotL1TTL is the L1 TTL of a hot key (default L1TTL). Keep it below
	// SoftTTL, like L1TTL: L1 serves soft-expired values only as stale.
	HotL1TTL time.Duration
	// ReplicaReads, when set, serves the reads of hot-key copies: a
	// Cluster client with ReadOnly and RouteRandomly, so a copy's GET may
	// land on any node of its slot, replicas included. Nothing else uses
	// it: the entry, locks, the lock path's double-check and every write
	// stay on masters. Nil: every read goes to masters.
	ReplicaReads redis.UniversalClient
	// Namespace prefixes every Redis key and channel this cache uses
	// (entries, copies, locks, job markers, the invalidation channel and
	// tracking prefixes), so two apps can share one Redis server. A
	// trailing ":" is added when missing. Callers pass keys without it.
	Namespace string
	// Channel carries L1 invalidations; default Namespace +
	// "cache:invalidate". Unused with Tracking.
	Channel string
	// FillChannel carries "key filled or its lock released" from the lock
	// holder to every instance's waiters (and evicts L1 copies); default
	// Namespace + "cache:filled". Used by the lock modes.
	FillChannel string
	// Tracking, when set with L1 on, replaces pub/sub with Redis CLIENT
	// TRACKING (BCAST): these options (cloned; ClientName defaults to
	// "stampede-guard:l1-tracking") open one dedicated RESP2 connection
	// that hears every change to a tracked key from any client, and Set
	// and Invalidate publish nothing. Tracking is per server, so it suits
	// one Redis server, not a Cluster, whose nodes each report only their
	// own keys. Nil keeps pub/sub on Channel.
	Tracking *redis.Options
	// TrackPrefixes are the key prefixes tracked (BCAST PREFIX), e.g.
	// "product:v1:"; Redis matches them against keys of every logical
	// database. Keys outside them bypass L1, since no invalidation would
	// ever reach them there. Empty tracks every key, which is noisy: each lock taken,
	// extended or released ("lock:…" keys) is then a message to every
	// instance too.
	TrackPrefixes []string
	// MaxRefreshes caps concurrent background refreshes; default 64.
	MaxRefreshes int
	// RefreshRetry is how long an instance leaves a stale key's refresh
	// alone after finding its lock held: another instance is loading it,
	// and that load's fill evicts the stale copy everywhere. Without it
	// every stale read during the refresh would try the lock again, a Redis
	// round trip each. Default 20 milliseconds (a lock waiter's first poll);
	// at most LockTTL.
	RefreshRetry time.Duration
	// MaxDirectLoads caps this instance's concurrent loads while the Redis
	// lock tier is unusable, so a Redis outage is not a database herd;
	// default 8.
	MaxDirectLoads int
	// Static names the never-expiring keys (config-like values): stored
	// fresh for StaticTTL, updated by writes and by the repair job
	// (StartRepair), never reloaded on the read path. See static.go.
	Static []string
	// StaticTTL is the safety TTL of a static key; default 24 hours.
	StaticTTL time.Duration
	// TracerProvider traces each Fetch and its lock wait, load and fenced
	// write (trace.go); nil traces nothing.
	TracerProvider trace.TracerProvider
	// OutageTTL is how long a value loaded while Redis is unusable may be
	// served from L1, past L1TTL, to reads that still find Redis unusable
	// (outage.go); never past the value's own freshness. Default 30
	// seconds; negative turns it off (such values live for L1TTL). Needs L1.
	OutageTTL time.Duration
	// SigningKey, when set, makes every entry carry an HMAC-SHA256 over
	// its envelope and key name (entry.go), and signs the versions fill
	// signals carry: a value that does not verify (planted, copied from
	// another key, written without the key) is a miss, replaced by a load.
	// All instances must share it. The Cache keeps its own copy.
	SigningKey []byte
	// Version, when set, is a loaded value's version (greater is newer),
	// kept in the signed envelope: an entry older than a version seen for
	// its key is refused as a replay (floor.go). Nil: no replay check.
	Version func(value []byte) uint64

	// pollFirst is a waiter's first poll interval (default pollStart);
	// tests that must tell a signal's wake-up from a poll's push it past
	// the load they wait for (export_test.go).
	pollFirst time.Duration
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if c.Mode == "" {
		c.Mode = ModeSWR
	}
	def(&c.TTL, 10*time.Minute)
	def(&c.SoftTTL, 30*time.Second)
	def(&c.NegativeTTL, 30*time.Second)
	def(&c.LockTTL, 5*time.Second)
	def(&c.LockWait, 2*time.Second)
	def(&c.LoadTimeout, c.LockTTL)
	def(&c.RefreshRetry, pollStart)
	def(&c.pollFirst, pollStart)
	// Never longer than a lock lives: a holder that died must not keep
	// the others from refreshing after its lock expired.
	c.RefreshRetry = min(c.RefreshRetry, c.LockTTL)
	def(&c.StaticTTL, 24*time.Hour)
	if c.OutageTTL == 0 {
		c.OutageTTL = 30 * time.Second
	}
	if c.XFetchBeta <= 0 {
		c.XFetchBeta = 1
	}
	if c.L1Size <= 0 {
		c.L1Size = 10_000
	}
	c.TTLJitter = min(max(c.TTLJitter, 0), 0.5)
	if c.Copies < 1 {
		c.Copies = 1
	}
	if c.Namespace != "" && !strings.HasSuffix(c.Namespace, ":") {
		c.Namespace += ":"
	}
	if c.Channel == "" {
		c.Channel = c.Namespace + "cache:invalidate"
	}
	if c.FillChannel == "" {
		c.FillChannel = c.Namespace + "cache:filled"
	}
	if c.Namespace != "" {
		prefixes := []string{c.Namespace} // "every key" means every key of this app
		if len(c.TrackPrefixes) > 0 {
			prefixes = make([]string, len(c.TrackPrefixes))
			for i, p := range c.TrackPrefixes {
				prefixes[i] = c.Namespace + p
			}
		}
		c.TrackPrefixes = prefixes
	}
	if c.MaxRefreshes <= 0 {
		c.MaxRefreshes = 64
	}
	if c.MaxDirectLoads <= 0 {
		c.MaxDirectLoads = 8
	}
	return c
}
