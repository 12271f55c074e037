package config

import (
	"strings"
	"testing"
	"time"

	"github.com/stampede-guard/api/cache"
)

// configErrorCases are environments Load must refuse, with what the
// error must name: the variable and, for a malformed value, the value.
var configErrorCases = []struct {
	name      string
	env       map[string]string
	wantVar   string
	wantValue string
}{
	{"unknown cache mode", map[string]string{"CACHE_MODE": "bogus"}, "CACHE_MODE", "bogus"},
	{"unknown L1 invalidation", map[string]string{"L1_INVALIDATION": "gossip"}, "L1_INVALIDATION", "gossip"},
	{"zero instances", map[string]string{"EXPECTED_INSTANCES": "0"}, "EXPECTED_INSTANCES", "0"},
	{"negative headroom", map[string]string{"DB_CONNS_HEADROOM": "-1"}, "DB_CONNS_HEADROOM", "-1"},
	{"strict sizing not a bool", map[string]string{"STRICT_POOL_SIZING": "maybe"}, "STRICT_POOL_SIZING", "maybe"},
	{"http cache not a bool", map[string]string{"HTTP_CACHE": "sometimes"}, "HTTP_CACHE", "sometimes"},
	{"max-age not a duration", map[string]string{"HTTP_MAX_AGE": "30"}, "HTTP_MAX_AGE", "30"},
	{"negative stale-if-error", map[string]string{"HTTP_STALE_IF_ERROR": "-1m"}, "HTTP_STALE_IF_ERROR", "-1m"},
	{"duration not a duration", map[string]string{"LOCK_TTL": "abc"}, "LOCK_TTL", "abc"},
	{"negative duration", map[string]string{"LOCK_TTL": "-1s"}, "LOCK_TTL", "-1s"},
	{"negative pool size", map[string]string{"DB_MAIN_MAX_CONNS": "-3"}, "DB_MAIN_MAX_CONNS", "-3"},
	{"pool size not a number", map[string]string{"DB_MAIN_MAX_CONNS": "x"}, "DB_MAIN_MAX_CONNS", `"x"`},
	{"pool size wraps int32", map[string]string{"DB_MAIN_MAX_CONNS": "4294967297"}, "DB_MAIN_MAX_CONNS", "4294967297"},
	{"breaker failures wrap", map[string]string{"BREAKER_FAILURES": "4294967297"}, "BREAKER_FAILURES", "4294967297"},
	{"proxy not a CIDR", map[string]string{"TRUSTED_PROXIES": "not-a-cidr"}, "TRUSTED_PROXIES", "not-a-cidr"},
	{"rate limit not a rate", map[string]string{"RATE_LIMIT": "lots"}, "RATE_LIMIT", "lots"},
	{"rate limit of nothing", map[string]string{"RATE_LIMIT": "0-S"}, "RATE_LIMIT", "0-S"},
	// One line: the key limit that follows it is not refused as well.
	{"rate limit with an unknown period", map[string]string{"RATE_LIMIT": "100-X"}, "RATE_LIMIT", "100-X"},
	{"order rate limit of nothing", map[string]string{"ORDER_RATE_LIMIT": "0-M"}, "ORDER_RATE_LIMIT", "0-M"},
	{"hot key not an id", map[string]string{"HOT_KEYS": "1,x"}, "HOT_KEYS", `"x"`},
	{"xfetch beta zero", map[string]string{"XFETCH_BETA": "0"}, "XFETCH_BETA", `"0"`},
	// Refused with the bound it broke, not "must be positive".
	{"xfetch beta huge", map[string]string{"XFETCH_BETA": "1e308"}, "XFETCH_BETA", "at most 1000000"},
	{"statement outlives lock", map[string]string{"DB_STATEMENT_TIMEOUT": "10s", "LOCK_TTL": "5s"}, "DB_STATEMENT_TIMEOUT", ""},
	{"request shorter than acquire+statement", map[string]string{"REQUEST_TIMEOUT": "1s", "DB_STATEMENT_TIMEOUT": "1s", "DB_ACQUIRE_TIMEOUT": "500ms"}, "REQUEST_TIMEOUT", ""},
	{"statement timeout under what a query needs", map[string]string{"REQUEST_TIMEOUT": "10ms"}, "DB_STATEMENT_TIMEOUT", "3ms (derived)"},
	{"statement timeout that would turn into none", map[string]string{"DB_STATEMENT_TIMEOUT": "900us"}, "DB_STATEMENT_TIMEOUT", "900µs (set)"},
	// At 1 ns every acquire ended before it began: the start failed on a
	// message about the cache signing key.
	{"acquire timeout shorter than a hand-over", map[string]string{"DB_ACQUIRE_TIMEOUT": "1ns"}, "DB_ACQUIRE_TIMEOUT=1ns (set)", "at least 1ms"},
	// The empty choice (unset) was listed as a blank: "one of , otlp, none".
	{"traces exporter unknown", map[string]string{"OTEL_TRACES_EXPORTER": "jaeger"}, "OTEL_TRACES_EXPORTER", "must be one of otlp, none, or unset"},
	{"lock wait outlives request", map[string]string{"LOCK_WAIT": "10s", "REQUEST_TIMEOUT": "5s"}, "LOCK_WAIT", ""},
	{"statement beyond what the write timeout allows", map[string]string{"DB_STATEMENT_TIMEOUT": "8s", "HTTP_WRITE_TIMEOUT": "5s"}, "capped by HTTP_WRITE_TIMEOUT", ""},
	{"write timeout inside request", map[string]string{"REQUEST_TIMEOUT": "10s", "HTTP_WRITE_TIMEOUT": "10s"}, "HTTP_WRITE_TIMEOUT", ""},
	{"soft TTL beyond hard TTL", map[string]string{"CACHE_SOFT_TTL": "20m", "CACHE_TTL": "10m"}, "CACHE_SOFT_TTL", ""},
	{"namespace breaks a hash tag", map[string]string{"CACHE_NAMESPACE": "a{b}"}, "CACHE_NAMESPACE", "a{b}"},
	{"namespace is a pattern", map[string]string{"CACHE_NAMESPACE": "app*"}, "CACHE_NAMESPACE", "app*"},
	{"namespace is the locks' prefix", map[string]string{"CACHE_NAMESPACE": "lock"}, "CACHE_NAMESPACE", "lock"},
	{"namespace is the entries' prefix", map[string]string{"CACHE_NAMESPACE": "product"}, "CACHE_NAMESPACE", "product"},
	{"redis URL not a URL", map[string]string{"REDIS_URL": "http://127.0.0.1:6379"}, "REDIS_URL", "http://127.0.0.1:6379"},
	{"redis DB not a number", map[string]string{"REDIS_URL": "redis://127.0.0.1:6379/x"}, "REDIS_URL", "redis://127.0.0.1:6379/x"},
	{"L1 beyond soft TTL", map[string]string{"L1_TTL": "5s", "CACHE_SOFT_TTL": "5s"}, "L1_TTL", ""},
	// The error named a soft TTL nobody set (derived from CACHE_TTL).
	{"L1 beyond the hard TTL", map[string]string{"L1_TTL": "5s", "CACHE_TTL": "2s"}, "CACHE_TTL=2s (set)", "L1_TTL=5s"},
	{"body timeout outlives request", map[string]string{"BODY_READ_TIMEOUT": "6s", "REQUEST_TIMEOUT": "5s"}, "BODY_READ_TIMEOUT", ""},
	{"negative body rate", map[string]string{"BODY_MIN_RATE": "-1"}, "BODY_MIN_RATE", "-1"},
	{"key rate limit not a rate", map[string]string{"RATE_LIMIT_KEY": "plenty"}, "RATE_LIMIT_KEY", "plenty"},
	{"unknown-id lookups zero", map[string]string{"UNKNOWN_ID_LOOKUPS": "0"}, "UNKNOWN_ID_LOOKUPS", `"0"`},
	{"queue cap negative", map[string]string{"SHED_MAX_WAITING": "-1"}, "SHED_MAX_WAITING", `"-1"`},
	// Checkout's cap is twice it: a value near the int64 limit wrapped
	// into a negative cap that refused every order.
	{"queue cap huge", map[string]string{"SHED_MAX_WAITING": "9223372036854775807"}, "SHED_MAX_WAITING", "9223372036854775807"},
	// More copies than Redis Cluster slots: their search never ended.
	{"copies beyond the slots", map[string]string{"HOT_KEY_COPIES": "16385"}, "HOT_KEY_COPIES", "16385"},
	// Pool sizing multiplies and adds them: huge values wrapped around.
	{"instances huge", map[string]string{"EXPECTED_INSTANCES": "9223372036854775807"}, "EXPECTED_INSTANCES", "9223372036854775807"},
	{"headroom huge", map[string]string{"DB_CONNS_HEADROOM": "9223372036854775807"}, "DB_CONNS_HEADROOM", "9223372036854775807"},
	// The budget's derived timeouts are shares and sums of the set ones.
	{"request timeout past a day", map[string]string{"REQUEST_TIMEOUT": "2562047h"}, "REQUEST_TIMEOUT", "2562047h"},
	{"lock TTL past a day", map[string]string{"LOCK_TTL": "25h"}, "LOCK_TTL", "25h"},
	{"proxies: every IPv4 address", map[string]string{"TRUSTED_PROXIES": "10.0.0.0/8,0.0.0.0/0"}, "TRUSTED_PROXIES", "0.0.0.0/0"},
	{"proxies: every IPv6 address", map[string]string{"TRUSTED_PROXIES": "::/0"}, "TRUSTED_PROXIES", "::/0"},
	// A key is a secret: the error names the rule, never the value.
	{"API key too short", map[string]string{"API_KEYS": "guessable"}, "API_KEYS", "(hidden)"},
	{"API key with a space", map[string]string{"API_KEYS": "ok-key-0123456789,has space 0123456789"}, "API_KEYS", "(hidden)"},
	{"static key not an id", map[string]string{"STATIC_KEYS": "7,seven"}, "STATIC_KEYS", `"seven"`},
	{"static TTL a nanosecond", map[string]string{"STATIC_KEYS": "42", "STATIC_TTL": "1ns"}, "STATIC_TTL", "at least 2s"},
	{"static repair every nanosecond", map[string]string{"STATIC_KEYS": "42", "STATIC_REPAIR_PERIOD": "1ns"}, "STATIC_REPAIR_PERIOD", "at least 1s"},
	// Redis keeps nothing under a millisecond: every store failed, and
	// the error named an L1 TTL nobody set.
	{"cache TTL a millisecond", map[string]string{"CACHE_TTL": "1ms", "L1_TTL": "0"}, "CACHE_TTL=\"1ms\"", "at least 10ms"},
	{"cache TTL a nanosecond", map[string]string{"CACHE_TTL": "1ns"}, "CACHE_TTL=\"1ns\"", "at least 10ms"},
	{"negative TTL a millisecond", map[string]string{"CACHE_NEGATIVE_TTL": "1ms"}, "CACHE_NEGATIVE_TTL", "at least 10ms"},
	{"404s outlive products", map[string]string{"CACHE_NEGATIVE_TTL": "20m"}, "CACHE_NEGATIVE_TTL=20m0s must be at most CACHE_TTL=10m0s (derived)", ""},
	{"404s outlive products, both set", map[string]string{"CACHE_TTL": "20s", "CACHE_NEGATIVE_TTL": "1m"}, "CACHE_TTL=20s (set)", ""},
	{"static keys repaired less often than they expire", map[string]string{"STATIC_TTL": "1m", "STATIC_REPAIR_PERIOD": "1m"}, "STATIC_REPAIR_PERIOD", ""},
	// Listen addresses are checked at load, naming the variable (the
	// listener's own error named none), and a malformed admin address is
	// one line about its form, not "not a loopback address" too.
	{"HTTP address without a port", map[string]string{"HTTP_ADDR": "garbage"}, "HTTP_ADDR", "want host:port"},
	{"HTTP port out of range", map[string]string{"HTTP_ADDR": "127.0.0.1:99999"}, "HTTP_ADDR", "127.0.0.1:99999"},
	{"metrics address without a colon", map[string]string{"METRICS_ADDR": "9091"}, "METRICS_ADDR", "want host:port"},
	{"admin address in capitals", map[string]string{"ADMIN_ADDR": "OFF"}, "ADMIN_ADDR", "want host:port"},
	{"admin port out of range", map[string]string{"ADMIN_ADDR": "localhost:99999"}, "ADMIN_ADDR", "want host:port"},
	// The detector keeps twice as many candidates: near the int limit the
	// count wrapped negative and detection silently stopped.
	{"OTLP endpoint without a scheme", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "otel-collector:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT", "want an http or https URL"},
	{"OTLP traces endpoint garbage", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "garbage"}, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "garbage"},
	// The TTL chain doubles them: past a year they are refused, not
	// wrapped into a soft TTL "shorter than" a hard one it should raise.
	{"soft TTL past a year", map[string]string{"CACHE_SOFT_TTL": "1500000h"}, "CACHE_SOFT_TTL", "at most 8760h0m0s"},
	{"hard TTL past a year", map[string]string{"CACHE_TTL": "2000000h"}, "CACHE_TTL", "at most 8760h0m0s"},
	// The pool's own error named no variable; pgx's hides the password.
	{"database URL not a URL", map[string]string{"DATABASE_URL": "notaurl"}, "DATABASE_URL", "notaurl"},
	{"database URL with a bad port", map[string]string{"DATABASE_URL": "postgres://u:secret-pw@db:badport/x"}, "DATABASE_URL", "invalid port"},
	// go-redis repeats the URL in its error: the password must not show.
	{"redis URL with a bad port and a password", map[string]string{"REDIS_URL": "redis://:secret-pw@127.0.0.1:abc/0"}, "REDIS_URL", "xxxxx@"},
	{"redis URL with a bad database and a password", map[string]string{"REDIS_URL": "redis://u:secret-pw@127.0.0.1:6379/abc"}, "REDIS_URL", "redis://xxxxx@127.0.0.1:6379/abc"},
	{"redis URL with a bad option and a password", map[string]string{"REDIS_URL": "rediss://:secret-pw@127.0.0.1:6379/0?skip_verify=maybe"}, "REDIS_URL", "xxxxx@"},
	// Passwords with characters a URL reserves, as `openssl rand -base64`
	// makes them: the parser took a piece of one for a port, and pgx's
	// redaction stopped at its first "@".
	{"redis password with a slash", map[string]string{"REDIS_URL": "redis://:secret-pw/x@127.0.0.1:abc/0"}, "REDIS_URL", "xxxxx@"},
	{"redis password with a hash", map[string]string{"REDIS_URL": "redis://:secret-pw#x@127.0.0.1:6379/0"}, "REDIS_URL", "percent-encode"},
	{"redis password with an at", map[string]string{"REDIS_URL": "redis://:a@secret-pw@127.0.0.1:abc/0"}, "REDIS_URL", "xxxxx@127.0.0.1:abc"},
	{"redis password in the query", map[string]string{"REDIS_URL": "redis://127.0.0.1:abc/0?password=secret-pw"}, "REDIS_URL", "password=xxxxx"},
	{"database password with an at", map[string]string{"DATABASE_URL": "postgres://u:a@secret-pw@db:badport/x"}, "DATABASE_URL", "invalid port"},
	// Accepted by go-redis: keys in database 0, invalidations on channel
	// "db-1", which no instance on /0 hears.
	{"redis database negative", map[string]string{"REDIS_URL": "redis://:secret-pw@127.0.0.1:6379/-1"}, "REDIS_URL", "0 or more"},
	{"redis port out of range", map[string]string{"REDIS_URL": "redis://127.0.0.1:99999/0"}, "REDIS_URL", "1 to 65535"},
	{"read replica URL with a bad sslmode", map[string]string{"DATABASE_READ_URL": "postgres://db/x?sslmode=bogus"}, "DATABASE_READ_URL", "sslmode"},
	{"hot-key top huge", map[string]string{"HOT_KEY_TOP": "9223372036854775807"}, "HOT_KEY_TOP", "at most 10000"},
	// The statement timeout was capped by the lock TTL: raising
	// REQUEST_TIMEOUT, as the message said, would not help.
	{"lock TTL too short for any statement", map[string]string{"LOCK_TTL": "5ms"}, "DB_STATEMENT_TIMEOUT", "raise LOCK_TTL"},
}

func TestLoadConfigErrors(t *testing.T) {
	for _, tc := range configErrorCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(envOf(tc.env))
			if err == nil {
				t.Fatalf("Load(%v): got nil error, want one naming %s", tc.env, tc.wantVar)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.wantVar) {
				t.Errorf("error %q: got no %s, want the variable named", msg, tc.wantVar)
			}
			if !strings.Contains(msg, tc.wantValue) {
				t.Errorf("error %q: got no %s, want the bad value", msg, tc.wantValue)
			}
			if strings.Contains(msg, "secret-pw") {
				t.Errorf("error %q shows a password", msg)
			}
			if strings.ContainsAny(msg, "\r\n") {
				t.Errorf("error %q: got several lines, want one (one mistake in the environment)", msg)
			}
		})
	}
}

func TestLoadConfigDefaults(t *testing.T) {
	c, err := Load(envOf(nil))
	if err != nil {
		t.Fatalf("Load with no variables: got %v, want nil", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"HTTP_ADDR", c.HTTPAddr, ":8080"},
		{"CACHE_MODE", c.CacheMode, cache.ModeSWR},
		{"L1_TTL", c.L1TTL, time.Second},
		{"RATE_LIMIT", c.RateLimit, "100-S"},
		{"DB_MAIN_MAX_CONNS", c.MainMaxConns, 20},
		{"TRUSTED_PROXIES", len(c.TrustedProxies), 0},
		{"HOT_KEYS", len(c.WarmKeys), 0},
		{"L1_INVALIDATION", c.L1Tracking, false},
		{"EXPECTED_INSTANCES", c.ExpectedInstances, 1},
		{"DB_CONNS_HEADROOM", c.PoolHeadroom, 10},
		{"STRICT_POOL_SIZING", c.StrictPoolSizing, false},
		{"HTTP_CACHE", c.HTTPCache.Enabled, true},
		{"HTTP_MAX_AGE", c.HTTPCache.MaxAge, 30 * time.Second},
		{"HTTP_STALE_WHILE_REVALIDATE", c.HTTPCache.StaleWhileRevalidate, 570 * time.Second},
		{"HTTP_STALE_IF_ERROR", c.HTTPCache.StaleIfError, 10 * time.Minute},
		{"API_KEYS", len(c.APIKeys), 0},
		{"BODY_READ_TIMEOUT", c.BodyReadTimeout, 2 * time.Second},
		{"BODY_MIN_RATE", c.BodyMinRate, 1024},
		{"ADMIN_TOKEN", c.AdminToken, ""},
		{"RATE_LIMIT_KEY", c.RateLimitKey, "1000-S"},
		{"UNKNOWN_ID_FILTER", c.UnknownIDFilter, true},
		{"UNKNOWN_ID_LOOKUPS", c.UnknownIDLookups, 20},
		{"SHED_MAX_WAITING", c.ShedMaxWaiting, 20},
	}
	if c, err := Load(envOf(map[string]string{"REQUEST_TIMEOUT": "1s", "DB_ACQUIRE_TIMEOUT": "300ms", "DB_STATEMENT_TIMEOUT": "500ms", "LOCK_WAIT": "500ms"})); err != nil || c.BodyReadTimeout != 500*time.Millisecond {
		t.Errorf("REQUEST_TIMEOUT=1s: got body read timeout %v (%v), want 500ms", c.BodyReadTimeout, err)
	}
	if c, err := Load(envOf(map[string]string{"TRUSTED_PROXIES": "0.0.0.0/0", "TRUSTED_PROXIES_ALLOW_ALL": "true"})); err != nil || len(c.TrustedProxies) != 1 {
		t.Errorf("TRUSTED_PROXIES=0.0.0.0/0 with TRUSTED_PROXIES_ALLOW_ALL=true: got %v, %v; want accepted", c.TrustedProxies, err)
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("%s: got %v, want %v", ck.name, ck.got, ck.want)
		}
	}
	if c, err := Load(envOf(map[string]string{"L1_TTL": "0", "HOT_KEYS": " 1, 42 "})); err != nil || c.L1TTL != 0 || len(c.WarmKeys) != 2 {
		t.Errorf("L1_TTL=0, HOT_KEYS=\" 1, 42 \": got L1 %v, hot keys %v, err %v; want 0, [1 42], nil", c.L1TTL, c.WarmKeys, err)
	}
	if c, err := Load(envOf(map[string]string{"SHED_MAX_WAITING": "0"})); err != nil || c.ShedMaxWaiting != 0 {
		t.Errorf("SHED_MAX_WAITING=0 (never queue): got %v, %v; want 0, nil", c.ShedMaxWaiting, err)
	}
}

// TestInvalidationChannelSeparatesApps: pub/sub ignores the logical
// database, so the channel carries it (or the namespace): apps on databases
// 12 and 13 of one server, or in two namespaces, never hear each other.
func TestInvalidationChannelSeparatesApps(t *testing.T) {
	channel := func(env map[string]string) string {
		t.Helper()
		c, err := Load(envOf(env))
		if err != nil {
			t.Fatalf("Load(%v): %v", env, err)
		}
		return c.InvalidationChannel() + " " + c.FillChannel()
	}
	pairs := [][2]map[string]string{
		{{"REDIS_URL": "redis://127.0.0.1:6379/12"}, {"REDIS_URL": "redis://127.0.0.1:6379/13"}},
		{{"CACHE_NAMESPACE": "shop"}, {"CACHE_NAMESPACE": "blog"}},
	}
	for _, p := range pairs {
		if a, b := channel(p[0]), channel(p[1]); a == b {
			t.Errorf("%v and %v share channel %q", p[0], p[1], a)
		}
	}
	if got := channel(map[string]string{"CACHE_NAMESPACE": "shop"}); got != "shop:cache:invalidate shop:cache:filled" {
		t.Errorf("namespaced channels %q, want shop:cache:invalidate shop:cache:filled", got)
	}
}

// envOf is a getenv over a map.
func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}
