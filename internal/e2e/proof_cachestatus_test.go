package e2e

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cacheStatus parses a one-member RFC 9211 Cache-Status field: the cache's
// name and its parameters (a bare parameter is "?1", as RFC 8941 reads it).
func cacheStatus(t *testing.T, field string) (name string, params map[string]string) {
	t.Helper()
	parts := strings.Split(field, ";")
	params = map[string]string{}
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok {
			v = "?1"
		}
		if _, dup := params[k]; dup {
			t.Errorf("Cache-Status %q: parameter %s twice", field, k)
		}
		params[k] = v
	}
	return strings.TrimSpace(parts[0]), params
}

// TestCacheStatusStaleForm: a product read served stale (swr, past its soft
// TTL) says so in RFC 9211's terms, end to end: X-Cache STALE and
// `Cache-Status: stampede-guard; hit; ttl=<negative>; detail=revalidating`.
// A hit with a negative ttl is the RFC's "served stale"; there is no fwd
// parameter, since the answer did not wait for the database (`fwd=stale`
// would say the request went on to revalidate). ttl is at most −1 even
// just past the soft expiry, where the rounded age past it is 0 and
// "ttl=0" would read as fresh. The MISS and HIT forms are checked too.
func TestCacheStatusStaleForm(t *testing.T) {
	t.Parallel()
	env := testEnv(t, map[string]string{"CACHE_MODE": "swr", "CACHE_SOFT_TTL": "1s", "CACHE_TTL": "1m"})
	base, _ := startApp(t, env)
	url := base + "/products/77"

	get := func() (string, string) {
		t.Helper()
		resp, _ := call(t, http.MethodGet, url, nil, "")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", url, resp.StatusCode)
		}
		return resp.Header.Get("X-Cache"), resp.Header.Get("Cache-Status")
	}
	xc, cs := get()
	name, p := cacheStatus(t, cs)
	if xc != "MISS" || name != "stampede-guard" || p["fwd"] != "miss" || p["stored"] != "?1" {
		t.Errorf("first read: X-Cache %q, Cache-Status %q; want MISS, stampede-guard; fwd=miss; stored; ttl=…", xc, cs)
	}
	xc, cs = get()
	_, p = cacheStatus(t, cs)
	if ttl, err := strconv.Atoi(p["ttl"]); xc != "HIT" || p["hit"] != "?1" || err != nil || ttl <= 0 {
		t.Errorf("second read: X-Cache %q, Cache-Status %q; want HIT, hit with a positive ttl", xc, cs)
	}

	// Poll until the entry goes stale: the first stale answer comes within
	// a poll of the soft expiry.
	deadline := time.Now().Add(10 * time.Second)
	for xc == "HIT" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		xc, cs = get()
	}
	if xc != "STALE" {
		t.Fatalf("after the soft TTL: X-Cache %q, Cache-Status %q; want STALE", xc, cs)
	}
	name, p = cacheStatus(t, cs)
	ttl, err := strconv.Atoi(p["ttl"])
	switch {
	case name != "stampede-guard":
		t.Errorf("stale Cache-Status %q: cache name %q, want stampede-guard", cs, name)
	case p["hit"] != "?1":
		t.Errorf("stale Cache-Status %q: want the hit parameter (served from the cache)", cs)
	case err != nil || ttl >= 0:
		t.Errorf("stale Cache-Status %q: want a negative ttl (RFC 9211: served stale)", cs)
	case p["detail"] != "revalidating":
		t.Errorf("stale Cache-Status %q: want detail=revalidating", cs)
	case p["fwd"] != "" || p["stored"] != "":
		t.Errorf("stale Cache-Status %q: want no fwd or stored (the answer did not wait for the database)", cs)
	}
	t.Logf("stale answer: %s", cs)

	// The background refresh lands: the next reads are fresh hits again.
	deadline = time.Now().Add(5 * time.Second)
	for xc != "HIT" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		xc, cs = get()
	}
	if xc != "HIT" {
		t.Errorf("after the refresh: X-Cache %q, Cache-Status %q; want HIT", xc, cs)
	}
}
