package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestOrdersReadableOnlyByOwner reproduces the probe of issue 27 row 1:
// order ids are sequential, so an anonymous client walked /orders/1, 2, 3…
// and read every order. Now an order answers only to its token (from the
// Location or body of POST /orders, in the query or X-Order-Token): no
// token is 401, and a wrong token answers exactly as an absent order does
// (404, same body), so the walk learns nothing.
func TestOrdersReadableOnlyByOwner(t *testing.T) {
	t.Parallel()
	base, _ := startApp(t, testEnv(t))
	var ids []int64
	var loc, token string
	for range 3 {
		resp, body := call(t, "POST", base+"/orders", nil, `{"product_id":9,"quantity":1}`)
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST /orders: got %d (body %s)", resp.StatusCode, body)
		}
		m := decodeObject(t, body)
		token, _ = m["token"].(string)
		loc = resp.Header.Get("Location")
		ids = append(ids, int64(m["id"].(float64)))
		if len(token) < 43 || loc != fmt.Sprintf("/orders/%d?token=%s", ids[len(ids)-1], url.QueryEscape(token)) {
			t.Fatalf("POST /orders: token %q, Location %q; want a 256-bit token in both", token, loc)
		}
	}
	last := ids[len(ids)-1]

	// The attacker's walk: every id, with no token and with a made-up one.
	var notFound []byte
	for id := int64(1); id <= last+2; id++ {
		path := fmt.Sprintf("%s/orders/%d", base, id)
		if resp, body := call(t, "GET", path, nil, ""); resp.StatusCode != http.StatusUnauthorized || decodeObject(t, body)["error"] == nil {
			t.Errorf("GET /orders/%d without a token: got %d (body %s), want a 401 JSON error", id, resp.StatusCode, body)
		}
		resp, body := call(t, "GET", path+"?token=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", nil, "")
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET /orders/%d with a made-up token: got %d (body %s), want 404", id, resp.StatusCode, body)
		}
		if notFound == nil {
			notFound = body
		} else if !bytes.Equal(body, notFound) {
			t.Errorf("GET /orders/%d: 404 body %s differs from %s: an existing id must look absent", id, body, notFound)
		}
	}

	// The owner: by the Location, by the header, and HEAD alike.
	for _, r := range []struct {
		method, path string
		header       map[string]string
	}{
		{"GET", loc, nil},
		{"HEAD", loc, nil},
		{"GET", fmt.Sprintf("/orders/%d", last), map[string]string{"X-Order-Token": token}},
	} {
		resp, body := call(t, r.method, base+r.path, r.header, "")
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s %s %v: got %d (body %s), want 200", r.method, r.path, r.header, resp.StatusCode, body)
		}
		if r.method == "GET" && strings.Contains(string(body), token) {
			t.Errorf("GET %s: body %s echoes the token", r.path, body)
		}
	}
	// A token given twice is refused, whichever comes first: a proxy or log
	// in front may read the other one (it answered the first one's 200).
	for _, q := range []string{loc + "&token=bogus", fmt.Sprintf("/orders/%d?token=bogus&token=%s", last, url.QueryEscape(token))} {
		if resp, body := call(t, "GET", base+q, nil, ""); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("GET %s: got %d (body %s), want 400", q, resp.StatusCode, body)
		}
	}
	req, _ := http.NewRequest("GET", fmt.Sprintf("%s/orders/%d", base, last), nil)
	req.Header.Add("X-Order-Token", token)
	req.Header.Add("X-Order-Token", "bogus")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /orders/%d with X-Order-Token twice: %v", last, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("GET /orders/%d with X-Order-Token twice: got %d, want 400", last, resp.StatusCode)
	}
	// Another order's token opens only its own order.
	if resp, _ := call(t, "GET", fmt.Sprintf("%s/orders/%d?token=%s", base, ids[0], url.QueryEscape(token)), nil, ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("order %d with order %d's token: got %d, want 404", ids[0], last, resp.StatusCode)
	}
}

// TestIdempotencyKeyScopedPerAPIKey: issue 27 row 1's last probe — an
// Idempotency-Key was global, so another client sending the same key got
// the first client's order (or a 422 confirming the key exists). Keys are
// now scoped: a caller with a valid API key and an anonymous caller using
// the same key each get an order of their own; each replay returns its own
// order and token. With RATE_LIMIT_KEY on, the class chain identifies the
// key; off, checkout does.
func TestIdempotencyKeyScopedPerAPIKey(t *testing.T) {
	t.Parallel()
	for _, keyLimit := range []string{"off", ""} {
		t.Run("RATE_LIMIT_KEY="+keyLimit, func(t *testing.T) {
			t.Parallel()
			idempotencyScoped(t, testEnv(t, map[string]string{"RATE_LIMIT_KEY": keyLimit}))
		})
	}
}

func idempotencyScoped(t *testing.T, env map[string]string) {
	base, _ := startApp(t, env)
	const key = "2f1e0c5e-8a3b-4f5e-9b1d-3c2a7e6f8d90"
	order := func(auth, body string) (id float64, token string, replayed bool) {
		t.Helper()
		h := map[string]string{"Idempotency-Key": key, "Authorization": auth}
		resp, b := call(t, "POST", base+"/orders", h, body)
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST /orders (Authorization %q): got %d (body %s), want 201", auth, resp.StatusCode, b)
		}
		m := decodeObject(t, b)
		token, _ = m["token"].(string)
		return m["id"].(float64), token, resp.Header.Get("Idempotent-Replayed") == "true"
	}
	keyed := "Bearer " + testAPIKey
	id1, tok1, _ := order(keyed, `{"product_id":10,"quantity":1}`)
	id2, tok2, replayed := order("", `{"product_id":11,"quantity":2}`)
	if replayed || id2 == id1 || tok2 == tok1 {
		t.Errorf("anonymous caller with the keyed caller's Idempotency-Key: order %v (replayed %v), want a new order, not %v", id2, replayed, id1)
	}
	if id, tok, replayed := order(keyed, `{"product_id":10,"quantity":1}`); !replayed || id != id1 || tok != tok1 {
		t.Errorf("keyed replay: order %v token %q replayed %v; want order %v token %q", id, tok, replayed, id1, tok1)
	}
	if id, tok, replayed := order("", `{"product_id":11,"quantity":2}`); !replayed || id != id2 || tok != tok2 {
		t.Errorf("anonymous replay: order %v token %q replayed %v; want order %v token %q", id, tok, replayed, id2, tok2)
	}
}

// TestCheckoutRefusesAKeyItCannotAccept: a key sent to POST /orders scopes
// the order, so a made-up one is 401 and places nothing. It was read as
// "no key" and the order placed anonymously: with the key store slow, a
// genuine key's order landed in the shared scope, where the same request
// retried with the key believed did not find it and ordered again.
func TestCheckoutRefusesAKeyItCannotAccept(t *testing.T) {
	t.Parallel()
	for _, keyLimit := range []string{"off", ""} {
		t.Run("RATE_LIMIT_KEY="+keyLimit, func(t *testing.T) {
			t.Parallel()
			env := testEnv(t, map[string]string{"RATE_LIMIT_KEY": keyLimit})
			base, _ := startApp(t, env)
			conn := dbConn(t, env["DATABASE_URL"])
			for _, tt := range []struct {
				auth   string
				status int
			}{
				{"Bearer made-up-key-0123456789", http.StatusUnauthorized},
				{"Basic dXNlcjpwdw==", http.StatusUnauthorized},
				{"Bearer " + testAPIKey, http.StatusCreated},
				{"", http.StatusCreated},
			} {
				before := scalar(t, conn, `SELECT count(*) FROM orders`)
				resp, body := call(t, "POST", base+"/orders", map[string]string{"Authorization": tt.auth}, `{"product_id":12,"quantity":1}`)
				after := scalar(t, conn, `SELECT count(*) FROM orders`)
				if resp.StatusCode != tt.status {
					t.Errorf("Authorization %q: got %d %s, want %d", tt.auth, resp.StatusCode, body, tt.status)
				}
				if placed := after - before; (tt.status == http.StatusCreated) != (placed == 1) || placed > 1 {
					t.Errorf("Authorization %q: %d orders placed", tt.auth, placed)
				}
				if tt.status == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") == "" {
					t.Errorf("Authorization %q: 401 without WWW-Authenticate", tt.auth)
				}
			}
		})
	}
}
