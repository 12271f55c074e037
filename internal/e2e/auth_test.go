package e2e

import (
	"bytes"
	"crypto/sha256"
	"net/http"
	"strings"
	"testing"
)

// TestWritesNeedAPIKey: product writes answer 401 (JSON error and
// WWW-Authenticate: Bearer) without a valid key; reads and orders stay
// anonymous.
func TestWritesNeedAPIKey(t *testing.T) {
	t.Parallel()
	base, _ := startApp(t, testEnv(t))
	product := `{"name":"keyed","price_cents":5}`
	cases := []struct {
		name, method, path, auth, body string
		want                           int
	}{
		{"create without key", "POST", "/products", "", product, 401},
		{"create with wrong key", "POST", "/products", "Bearer not-the-key-0123456789", product, 401},
		{"create with key as Basic", "POST", "/products", "Basic " + testAPIKey, product, 401},
		{"create with key prefix", "POST", "/products", "Bearer " + testAPIKey[:len(testAPIKey)-1], product, 401},
		{"create with bare key", "POST", "/products", testAPIKey, product, 401},
		{"update without key", "PUT", "/products/5", "", product, 401},
		{"update with wrong key", "PUT", "/products/5", "Bearer x", product, 401},
		{"create with key", "POST", "/products", "Bearer " + testAPIKey, product, 201},
		{"scheme is case-insensitive", "POST", "/products", "bearer " + testAPIKey, product, 201},
		{"update with key", "PUT", "/products/5", "Bearer " + testAPIKey, product, 200},
		{"read stays anonymous", "GET", "/products/5", "", "", 200},
		{"list stays anonymous", "GET", "/products?limit=1", "", "", 200},
		{"order stays anonymous", "POST", "/orders", "", `{"product_id":6,"quantity":1}`, 201},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := call(t, tc.method, base+tc.path, map[string]string{"Authorization": tc.auth}, tc.body)
			if resp.StatusCode != tc.want {
				t.Fatalf("got %d, want %d (body %s)", resp.StatusCode, tc.want, body)
			}
			if tc.want != 401 {
				return
			}
			if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer ") {
				t.Errorf("WWW-Authenticate: got %q, want a Bearer challenge", got)
			}
			if m := decodeObject(t, body); m["error"] == "" || m["error"] == nil {
				t.Errorf("body %s: want {\"error\": ...}", body)
			}
		})
	}
}

// TestWritesRefusedWithoutAnyKey: no API_KEYS and an empty api_keys table
// mean no write at all (secure by default), whatever key is presented.
func TestWritesRefusedWithoutAnyKey(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	delete(env, "API_KEYS")
	base, _ := startApp(t, env)
	for _, auth := range []string{"", "Bearer " + testAPIKey, "Bearer anything-at-all-0123456789"} {
		resp, body := call(t, "POST", base+"/products", map[string]string{"Authorization": auth}, `{"name":"n","price_cents":1}`)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("Authorization %q: got %d, want 401 (body %s)", auth, resp.StatusCode, body)
		}
	}
}

// TestKeysCreateCommand: `api keys create` prints a key once and stores only
// its SHA-256; the key then authorises writes with API_KEYS empty, and keeps
// doing so from the in-process cache, without a query per request.
func TestKeysCreateCommand(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	delete(env, "API_KEYS")
	var out bytes.Buffer
	if err := command(t.Context(), []string{"keys", "create", "--scope", "write"}, envOf(env), &out); err != nil {
		t.Fatalf("keys create: %v", err)
	}
	key := strings.TrimSpace(out.String())
	if len(key) < 40 || strings.ContainsAny(key, " \n") {
		t.Fatalf("keys create printed %q, want one key", out.String())
	}

	conn := dbConn(t, env["DATABASE_URL"])
	var stored []byte
	var scope string
	if err := conn.QueryRow(t.Context(), `SELECT key_sha256, scope FROM api_keys`).Scan(&stored, &scope); err != nil {
		t.Fatalf("read api_keys: %v", err)
	}
	if sum := sha256.Sum256([]byte(key)); !bytes.Equal(stored, sum[:]) || scope != "write" {
		t.Fatalf("api_keys holds %x/%s, want the SHA-256 of the printed key with scope write", stored, scope)
	}

	base, _ := startApp(t, env)
	write := func() int {
		resp, body := call(t, "POST", base+"/products", map[string]string{"Authorization": "Bearer " + key}, `{"name":"n","price_cents":1}`)
		if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("POST: got %d (body %s)", resp.StatusCode, body)
		}
		return resp.StatusCode
	}
	if got := write(); got != http.StatusCreated {
		t.Fatalf("POST with a created key: got %d, want 201", got)
	}
	// The verified key is believed from memory: with its row gone, the
	// next write still passes without asking PostgreSQL.
	if _, err := conn.Exec(t.Context(), `DELETE FROM api_keys`); err != nil {
		t.Fatal(err)
	}
	if got := write(); got != http.StatusCreated {
		t.Fatalf("POST with a verified key after its row went: got %d, want 201 from the in-process cache", got)
	}

	// A bad command is refused before it connects anywhere: pointed at an
	// address where nothing listens, it still fails at once with usage.
	nowhere := envOf(map[string]string{"DATABASE_URL": "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=5"})
	// It says what was wrong, not only the usage.
	for _, tc := range []struct {
		args []string
		why  string
	}{
		{[]string{"keys", "create", "--scope", "admin"}, `unknown scope "admin"`},
		{[]string{"keys", "create", "extra"}, `unexpected argument "extra"`},
		{[]string{"keys", "create", "--owner", "me"}, "--owner"},
		{[]string{"keys", "drop"}, "usage"},
	} {
		err := command(t.Context(), tc.args, nowhere, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "usage") || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%v: got %v, want a usage error saying %s", tc.args, err, tc.why)
		}
	}
}
