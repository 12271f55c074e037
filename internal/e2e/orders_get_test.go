package e2e

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
)

// TestGetOrderFollowsLocation: the Location of POST /orders (which
// carries the order's token) leads to the order it created; an absent order
// is 404 and a malformed id 400, both in the JSON error contract.
func TestGetOrderFollowsLocation(t *testing.T) {
	t.Parallel()
	base, _ := startApp(t, testEnv(t))
	resp, body := call(t, "POST", base+"/orders", nil, `{"product_id":7,"quantity":2}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /orders: got %d, want 201 (body %s)", resp.StatusCode, body)
	}
	loc := resp.Header.Get("Location")
	var created, fetched map[string]any
	if err := json.Unmarshal(body, &created); err != nil {
		t.Fatal(err)
	}
	resp, got := call(t, "GET", base+loc, nil, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: got %d, want 200 (body %s)", loc, resp.StatusCode, got)
	}
	if err := json.Unmarshal(got, &fetched); err != nil {
		t.Fatal(err)
	}
	delete(created, "token") // handed out once, by POST; a read does not echo it
	if !reflect.DeepEqual(created, fetched) {
		t.Errorf("GET %s: got %v, want the created order %v", loc, fetched, created)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control: got %q, want no-store", cc)
	}

	for path, want := range map[string]int{
		"/orders/999999999?token=x": http.StatusNotFound,
		"/orders/0":                 http.StatusBadRequest,
		"/orders/abc":               http.StatusBadRequest,
		"/orders/-1":                http.StatusBadRequest,
	} {
		resp, body := call(t, "GET", base+path, nil, "")
		if resp.StatusCode != want {
			t.Errorf("GET %s: got %d, want %d (body %s)", path, resp.StatusCode, want, body)
			continue
		}
		if m := decodeObject(t, body); m["error"] == nil {
			t.Errorf("GET %s: body %s, want {\"error\": ...}", path, body)
		}
	}
}
