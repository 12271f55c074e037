package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/internal/testkit/netproxy"
)

// TestUnknownIDServedFromL1 is negative caching with the L1 on, end to
// end: the app reaches Redis through a TCP proxy that counts the commands
// naming one product's key. The first GET of an id that does not exist is
// a 404 that stores a negative entry; the next 20 GETs are 404s that send
// no command naming the key at all. (The unknown-id filter is off, or it
// would answer before the cache.)
func TestUnknownIDServedFromL1(t *testing.T) {
	t.Parallel()
	env := testEnv(t, map[string]string{"L1_TTL": "10s", "CACHE_NEGATIVE_TTL": "30s", "UNKNOWN_ID_FILTER": "false"})
	const id = absentProductID
	key := nsKey(env, fmt.Sprintf("product:v1:{%d}", id))
	needle := []byte(key + "\r\n")
	var mentions atomic.Int64
	p, err := netproxy.New(dbtest.RedisAddr(), netproxy.Options{Observe: func() func([]byte) {
		var tail []byte
		return func(b []byte) {
			buf := append(tail, b...)
			mentions.Add(int64(bytes.Count(buf, needle)))
			keep := min(len(buf), len(needle)-1)
			tail = append([]byte(nil), buf[len(buf)-keep:]...)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	u, err := url.Parse(env["REDIS_URL"])
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.Addr()
	env["REDIS_URL"] = u.String()
	base, _ := startApp(t, env)
	get := fmt.Sprintf("%s/products/%d", base, id)

	if resp, _ := call(t, http.MethodGet, get, nil, ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("first GET of an unknown id: %d, want 404", resp.StatusCode)
	}
	if mentions.Load() == 0 {
		t.Fatalf("the proxy saw no command naming %s: the count is broken", key)
	}
	before := mentions.Load()
	for i := range 20 {
		if resp, _ := call(t, http.MethodGet, get, nil, ""); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("GET %d of an unknown id: %d, want 404", i, resp.StatusCode)
		}
	}
	if got := mentions.Load() - before; got != 0 {
		t.Errorf("20 repeated GETs of an unknown id sent %d Redis commands naming %s, want 0 (served from L1)", got, key)
	}
}
