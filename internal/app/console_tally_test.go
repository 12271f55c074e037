package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stampede-guard/api/middleware"
)

// TestConsoleTallyCountsOnlyValidatedIDs: the console's tally of product
// reads keeps only ids the handler took (200, 304, 404), in bounded memory.
// Huge ids (60 KB), random bytes, non-canonical spellings (400) and reads
// the rate limit refused (429) must leave nothing behind; the probe that
// found this held 18 MiB after 300 requests with 60 KB ids.
func TestConsoleTallyCountsOnlyValidatedIDs(t *testing.T) {
	t.Parallel()
	// 20 requests a minute from one address: the three good reads and
	// some refused ids pass the limit, everything after it is a 429.
	s := tallyServer(t, testEnv(t, map[string]string{"RATE_LIMIT": "20-M"}))
	srv := httptest.NewServer(s.handler)
	t.Cleanup(srv.Close)

	get := func(method, id string) int {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+"/products/"+id, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s /products/%.40s: %v", method, id, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		method, id string
		want       int
	}{{"GET", "1", 200}, {"HEAD", "2", 200}, {"GET", fmt.Sprint(absentProductID), 404}} {
		if got := get(tc.method, tc.id); got != tc.want {
			t.Fatalf("%s /products/%s: %d, want %d", tc.method, tc.id, got, tc.want)
		}
	}
	refused := map[int]int{}
	huge := "9" + strings.Repeat("0", 60<<10) // 60 KB of digits: no int64
	for i := range 300 {
		refused[get("GET", huge+fmt.Sprint(i))]++
		raw := make([]byte, 1+rand.IntN(200))
		for j := range raw {
			raw[j] = byte(rand.IntN(256))
		}
		refused[get("GET", url.PathEscape(string(raw)))]++
		refused[get("HEAD", []string{"+1", "01", "0", "-7", "1.5", "1e3"}[i%6])]++
	}
	refused[get("GET", "3")]++ // a good id, refused by the rate limit
	if refused[http.StatusTooManyRequests] == 0 || refused[http.StatusBadRequest] == 0 {
		t.Fatalf("statuses %v: want both 400 (bad ids) and 429 (rate limit) among the refused", refused)
	}
	for code := range refused {
		if code != http.StatusBadRequest && code != http.StatusTooManyRequests && code != http.StatusNotFound {
			t.Errorf("a refused read answered %d (statuses %v)", code, refused)
		}
	}

	entries, keyBytes := tallyFootprint(s.reads)
	if entries != 3 {
		t.Errorf("tally holds %d ids, want 3 (1, 2, %d): refused reads were counted", entries, absentProductID)
	}
	if keyBytes > 20*entries {
		t.Errorf("tally keys hold %d bytes for %d ids: unvalidated ids are kept", keyBytes, entries)
	}
	if top := s.reads.top(10); len(top) != 3 {
		t.Errorf("top keys %v, want products 1, 2 and %d", top, absentProductID)
	}
}

// tallyServer builds the server of env the way run does, without
// listening, so the test can look at its tally.
func tallyServer(t *testing.T, env map[string]string) *httpServer {
	t.Helper()
	cfg, err := loadConfig(envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d, err := openDeps(ctx, cfg, &tracing{}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.close)
	m := newMetrics(d.cache, d.pools(), d.breakers())
	s, err := newServer(d, m, nil, nil, middleware.NewAccessLog(io.Discard, slog.LevelInfo))
	if err != nil {
		t.Fatal(err)
	}
	if s.reads == nil {
		t.Fatal("no request tally (ADMIN_ADDR=off?)")
	}
	return s
}

// tallyFootprint is what the tally holds over both half-windows: the ids
// and the bytes of their keys (a string key's length, a number's size).
func tallyFootprint(h *requestTally) (entries, keyBytes int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range []any{h.cur, h.old} {
		it := reflect.ValueOf(m).MapRange()
		for it.Next() {
			entries++
			if k := it.Key(); k.Kind() == reflect.String {
				keyBytes += k.Len()
			} else {
				keyBytes += int(k.Type().Size())
			}
		}
	}
	return entries, keyBytes
}
