package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestConsoleTallyCountsOnlyValidatedIDs: the console's tally of product
// reads keeps only ids the handler took (200, 304, 404): the feed's top
// keys are those ids and nothing else. Huge ids (60 KB), random bytes,
// non-canonical spellings (400) and reads the rate limit refused (429)
// must leave nothing behind; the probe that found this held 18 MiB after
// 300 requests with 60 KB ids. (The memory bound itself is
// internal/admin's TestTallyKeepsOnlyTakenIDs.)
func TestConsoleTallyCountsOnlyValidatedIDs(t *testing.T) {
	t.Parallel()
	// 20 requests a minute per address: the junk client's first refused
	// ids pass the limit, everything after it is a 429. The good reads come
	// last, from another address (through the trusted local proxy), so
	// they are inside the tally's window however slow the junk was.
	a := launchApp(t, testEnv(t, map[string]string{"RATE_LIMIT": "20-M", "TRUSTED_PROXIES": "127.0.0.1/32"}))
	base := a.waitListening()
	const junkClient, goodClient = "203.0.113.7", "198.51.100.1"

	get := func(method, id, client string) int {
		t.Helper()
		req, err := http.NewRequest(method, base+"/products/"+id, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Forwarded-For", client)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s /products/%.40s: %v", method, id, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	refused := map[int]int{}
	huge := "9" + strings.Repeat("0", 60<<10) // 60 KB of digits: no int64
	for i := range 300 {
		refused[get("GET", huge+fmt.Sprint(i), junkClient)]++
		raw := make([]byte, 1+rand.IntN(200))
		for j := range raw {
			raw[j] = byte(rand.IntN(256))
		}
		raw[0] = 'x' // never a canonical id by chance (a lone "7" is one)
		refused[get("GET", url.PathEscape(string(raw)), junkClient)]++
		refused[get("HEAD", []string{"+1", "01", "0", "-7", "1.5", "1e3"}[i%6], junkClient)]++
	}
	refused[get("GET", "3", junkClient)]++ // a good id, refused by the rate limit
	if refused[http.StatusTooManyRequests] == 0 || refused[http.StatusBadRequest] == 0 {
		t.Fatalf("statuses %v: want both 400 (bad ids) and 429 (rate limit) among the refused", refused)
	}
	for code := range refused {
		if code != http.StatusBadRequest && code != http.StatusTooManyRequests && code != http.StatusNotFound {
			t.Errorf("a refused read answered %d (statuses %v)", code, refused)
		}
	}

	for _, tc := range []struct {
		method, id string
		want       int
	}{{"GET", "1", 200}, {"HEAD", "2", 200}, {"GET", fmt.Sprint(absentProductID), 404}} {
		if got := get(tc.method, tc.id, goodClient); got != tc.want {
			t.Fatalf("%s /products/%s: %d, want %d", tc.method, tc.id, got, tc.want)
		}
	}
	want := []string{"product 1", "product 2", fmt.Sprint("product ", absentProductID)}
	if got := topKeys(t, a); !slices.Equal(got, want) {
		t.Errorf("top keys %v, want %v: refused or malformed reads were counted", got, want)
	}
}

// topKeys reads the console feed's top keys of app a, sorted.
func topKeys(t *testing.T, a *instance) []string {
	t.Helper()
	admin := a.logs.records("admin listening")
	if len(admin) == 0 {
		t.Fatal(`no "admin listening" log line`)
	}
	resp, body := call(t, "GET", fmt.Sprintf("http://%s/api/state", admin[0]["addr"]), nil, "")
	var st struct {
		TopKeys []struct {
			Key string `json:"key"`
		} `json:"top_keys"`
	}
	if err := json.Unmarshal(body, &st); resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("GET /api/state: %d, %v", resp.StatusCode, err)
	}
	keys := make([]string, len(st.TopKeys))
	for i, k := range st.TopKeys {
		keys[i] = k.Key
	}
	slices.Sort(keys)
	return keys
}
