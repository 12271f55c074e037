package handlers

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/repo"
)

// answerProducts answers Get with a fixed product and freshness.
type answerProducts struct {
	fakeProducts
	f   repo.Freshness
	err error
}

func (a answerProducts) Get(context.Context, int64) (repo.Product, repo.Freshness, error) {
	return repo.Product{ID: 1, Name: "p", PriceCents: 5, UpdatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}, a.f, a.err
}

// TestProductHeaders: the headers a product read sets in one go land under
// net/http's canonical keys (so Header.Get finds them and no second
// spelling goes on the wire) with the values each kind of answer needs.
func TestProductHeaders(t *testing.T) {
	tests := []struct {
		name  string
		store answerProducts
		want  map[string]string // "" = absent
	}{
		{"hit with age", answerProducts{f: repo.Freshness{Status: cache.Hit, TTL: 20 * time.Second, Age: 10 * time.Second}}, map[string]string{
			"X-Cache": "HIT", "Cache-Status": "stampede-guard; hit; ttl=20", "Cache-Control": "no-store",
			"Etag": "*", "Last-Modified": "Fri, 02 Jan 2026 03:04:05 GMT", "Age": "10"}},
		{"stale", answerProducts{f: repo.Freshness{Status: cache.Stale, TTL: -3 * time.Second}}, map[string]string{
			"X-Cache": "STALE", "Cache-Status": "stampede-guard; hit; ttl=-3; detail=revalidating", "Age": ""}},
		{"miss", answerProducts{f: repo.Freshness{Status: cache.Miss, TTL: 30 * time.Second}}, map[string]string{
			"X-Cache": "MISS", "Cache-Status": "stampede-guard; fwd=miss; stored; ttl=30"}},
		{"not found", answerProducts{f: repo.Freshness{Status: cache.Hit, TTL: 5 * time.Second}, err: repo.ErrNotFound}, map[string]string{
			"X-Cache": "HIT", "Cache-Control": "no-store", "Etag": "", "Last-Modified": "", "Age": ""}},
		{"not found, not looked up", answerProducts{f: repo.Freshness{Status: cache.Miss, Unsure: true}, err: repo.ErrNotFound}, map[string]string{
			"X-Cache": "MISS", "Cache-Status": "stampede-guard; detail=unknown-id-not-looked-up", "Cache-Control": "no-store", "Age": ""}},
		// A cached 404 says its age too: its max-age is the negative TTL,
		// and without Age a downstream cache kept it past this cache's copy.
		{"not found with age", answerProducts{f: repo.Freshness{Status: cache.Hit, TTL: 5 * time.Second, Age: 25 * time.Second}, err: repo.ErrNotFound}, map[string]string{
			"X-Cache": "HIT", "Etag": "", "Age": "25"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(t, tt.store, httptest.NewRequest(http.MethodGet, "/products/1", nil))
			for key := range rec.Header() {
				if c := textproto.CanonicalMIMEHeaderKey(key); c != key {
					t.Errorf("header %q set under a non-canonical key (want %q)", key, c)
				}
			}
			for key, want := range tt.want {
				got := rec.Header().Get(key)
				switch {
				case want == "*" && got == "", want != "*" && got != want:
					t.Errorf("%s: %q, want %q", key, got, want)
				}
				if n := len(rec.Header()[key]); n > 1 {
					t.Errorf("%s: %d values, want one", key, n)
				}
			}
		})
	}
}

// TestHeadersPastTheArray: a header added past the fixed array is set too.
func TestHeadersPastTheArray(t *testing.T) {
	rec := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(rec)
	var hs headers
	for i := range maxHeaders + 2 {
		hs.add(fmt.Sprintf("X-H%d", i), fmt.Sprint(i))
	}
	hs.set(c)
	for i := range maxHeaders + 2 {
		if got := rec.Header().Get(fmt.Sprintf("X-H%d", i)); got != fmt.Sprint(i) {
			t.Errorf("X-H%d: %q, want %q", i, got, fmt.Sprint(i))
		}
	}
}

// TestHTTPDates: a remembered Last-Modified is always the one Format writes,
// for the same second again, for another second in the same slot, and for
// an instant given in another zone; a zero time has none.
func TestHTTPDates(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	slots := int64(len(httpDates{}.slots))
	tests := []struct {
		name string
		t    time.Time
	}{
		{"first", base},
		{"same second, another fraction", base.Add(300 * time.Millisecond)},
		{"same slot, another second", base.Add(time.Duration(slots) * time.Second)},
		{"back to the first", base},
		{"next second", base.Add(time.Second)},
		{"another zone", base.In(time.FixedZone("X", -7*3600))},
		{"before 1970", time.Date(1960, 5, 6, 7, 8, 9, 0, time.UTC)},
	}
	var d httpDates
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := d.lastModified(tt.t), tt.t.UTC().Format(http.TimeFormat); got != want {
				t.Errorf("%q, want %q", got, want)
			}
		})
	}
	if got := d.lastModified(time.Time{}); got != "" {
		t.Errorf("zero time: %q, want none", got)
	}
}

// TestProductBodiesOnlyForTheSameProduct: the memoized answer is handed out
// only for the very product it encodes; any other product, even one
// differing only in its name or its version, or sharing its slot, is
// encoded afresh.
func TestProductBodiesOnlyForTheSameProduct(t *testing.T) {
	var b productBodies
	lamp := repo.Product{ID: 7, Name: "lamp", PriceCents: 1200, UpdatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	renamed, newer, sameSlot := lamp, lamp, lamp
	renamed.Name = "desk"
	newer.UpdatedAt = newer.UpdatedAt.Add(time.Microsecond)
	sameSlot.ID += int64(len(b.slots))
	for _, p := range []repo.Product{lamp, lamp, renamed, lamp, newer, sameSlot, lamp, {ID: 8, Name: "other"}} {
		wantBody, wantTag := productJSON(p)
		if body, tag := b.json(p); string(body) != string(wantBody) || tag != wantTag {
			t.Errorf("json(%+v) = %s %s, want %s %s", p, body, tag, wantBody, wantTag)
		}
	}
}
