package middleware

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	limiter "github.com/ulule/limiter/v3"
	memstore "github.com/ulule/limiter/v3/drivers/store/memory"
)

// doFrom sends auth from the client address ip.
func doFrom(e http.Handler, ip, auth string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", "/", nil)
	req.RemoteAddr = ip + ":40000"
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	return rec
}

func abuseAuth(store KeyStore, failures *limiter.Limiter, log *slog.Logger) *Auth {
	return NewAuth(AuthConfig{Store: store, Static: []string{"static-key-0123456789"}, Scope: "write",
		CacheTTL: time.Minute, LookupsPerSecond: 20, LookupsPerClient: 1, LookupBurst: 5, Failures: failures, Log: log})
}

// TestMadeUpKeysDoNotStarveOtherClients reproduces issue 27 row 4: 60
// made-up keys from one client spent the instance's 20 lookups, and a
// genuine key (in the store, not yet believed) from another client got 503.
// Each client now has its own share: the flood is refused with 429 once its
// share is spent, and the other client's key is looked up and admitted.
func TestMadeUpKeysDoNotStarveOtherClients(t *testing.T) {
	const key = "sgk_genuine-0123456789"
	store := &countingStore{valid: sha(key)}
	e := authEngine(abuseAuth(store, nil, slog.New(slog.NewTextHandler(io.Discard, nil))), false)
	for i := range 60 {
		rec := doFrom(e, "203.0.113.7", fmt.Sprintf("Bearer made-up-%d", i))
		if rec.Code == http.StatusOK {
			t.Fatalf("made-up key #%d: admitted", i)
		}
	}
	if n := store.calls.Load(); n > 6 {
		t.Errorf("60 made-up keys from one client: %d lookups, want ≤ its share (5, plus refill)", n)
	}
	if rec := doFrom(e, "198.51.100.9", "Bearer "+key); rec.Code != http.StatusOK {
		t.Errorf("genuine key from another client after the flood: got %d %s, want 200", rec.Code, rec.Body)
	}
	// A neighbour in the flooding client's IPv6 /64 is the same client.
	for i := range 10 {
		doFrom(e, fmt.Sprintf("2001:db8:1:2::%x", i+1), fmt.Sprintf("Bearer v6-%d", i))
	}
	rec := doFrom(e, "2001:db8:1:2::ffff", "Bearer v6-last")
	if rec.Code != http.StatusTooManyRequests {
		t.Errorf("made-up key from a /64 that spent its share: got %d, want 429", rec.Code)
	}
	// Every 429 carries Retry-After and X-RateLimit-* (SPEC §3): the
	// share's burst, none left, and a reset within the second a lookup
	// takes to refill (LookupsPerClient 1).
	h := rec.Header()
	reset, err := strconv.ParseInt(h.Get("X-Ratelimit-Reset"), 10, 64)
	if h.Get("Retry-After") != "1" || h.Get("X-Ratelimit-Limit") != "5" || h.Get("X-Ratelimit-Remaining") != "0" ||
		err != nil || reset < time.Now().Unix() || reset > time.Now().Add(2*time.Second).Unix() {
		t.Errorf("429 for a spent lookup share: headers %v, want Retry-After 1, X-RateLimit-Limit 5, Remaining 0 and a reset within 2 s", h)
	}
}

// TestFailedAuthenticationLimited reproduces issue 27 row 5: 300 writes
// with no key or a wrong key met no 429, so a weak key could be guessed
// online. Past AUTH_FAILURE_LIMIT a client's writes answer 429 with
// Retry-After and X-RateLimit-* before any key is checked; other clients
// are unaffected.
func TestFailedAuthenticationLimited(t *testing.T) {
	rate, _ := limiter.NewRateFromFormatted("20-M")
	failures := limiter.New(memstore.NewStore(), rate)
	e := authEngine(abuseAuth(nil, failures, slog.New(slog.NewTextHandler(io.Discard, nil))), false)
	codes := map[int]int{}
	for i := range 300 {
		auth := ""
		if i%2 == 1 {
			auth = fmt.Sprintf("Bearer guess-%d", i)
		}
		rec := doFrom(e, "203.0.113.7", auth)
		codes[rec.Code]++
		if rec.Code == http.StatusTooManyRequests && (rec.Header().Get("Retry-After") == "" || rec.Header().Get("X-Ratelimit-Limit") != "20") {
			t.Fatalf("429 without Retry-After and X-RateLimit-Limit: %v", rec.Header())
		}
	}
	if codes[http.StatusUnauthorized] != 20 || codes[http.StatusTooManyRequests] != 280 {
		t.Errorf("300 failed authentications from one client: %v, want 20 × 401 then 280 × 429", codes)
	}
	if rec := doFrom(e, "203.0.113.7", "Bearer static-key-0123456789"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("the limited client's next write, even with a valid key: got %d, want 429 until the window ends", rec.Code)
	}
	for auth, want := range map[string]int{"Bearer wrong": http.StatusUnauthorized, "Bearer static-key-0123456789": http.StatusOK} {
		if rec := doFrom(e, "198.51.100.9", auth); rec.Code != want {
			t.Errorf("another client, %q: got %d, want %d", auth, rec.Code, want)
		}
	}
}

// TestRefusalLogsSampled: every refused lookup wrote a WARN line, unbounded
// (352 lines in the probe). A flood of refusals now writes at most
// refusalLogsPerSecond lines a second.
func TestRefusalLogsSampled(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	a := NewAuth(AuthConfig{Store: &countingStore{}, Scope: "write", CacheTTL: time.Minute, LookupsPerSecond: 1, Log: log})
	gin.SetMode(gin.TestMode)
	e := authEngine(a, false)
	start := time.Now()
	for i := range 300 {
		doFrom(e, fmt.Sprintf("198.51.100.%d", i%250), fmt.Sprintf("Bearer flood-%d", i))
	}
	// The sampler counts per calendar second: a flood under one second
	// long may still touch two of them.
	seconds := int(time.Now().Unix()-start.Unix()) + 1
	lines := strings.Count(buf.String(), "level=WARN")
	if lines == 0 || lines > refusalLogsPerSecond*seconds {
		t.Errorf("300 refused lookups in %d s: %d WARN lines, want 1 to %d", seconds, lines, refusalLogsPerSecond*seconds)
	}
}
