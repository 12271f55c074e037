package handlers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/repo"
)

// productAt is a store whose one product was last updated at updated.
type productAt struct {
	recordingProducts
	updated time.Time
}

func (s *productAt) product() repo.Product {
	p := recorded
	p.UpdatedAt = s.updated
	return p
}

func (s *productAt) Get(context.Context, int64) (repo.Product, repo.Freshness, error) {
	return s.product(), repo.Freshness{Status: cache.Hit, TTL: 20 * time.Second}, nil
}

// TestConditionalReadsByDateAndTag: a date is a validator only once the
// second it names, and one more, are over (an update in that second would
// otherwise be answered 304 to a client holding the older version); a
// read's If-Match and If-Unmodified-Since are honoured with 412; and the
// lines of one conditional header form one list.
func TestConditionalReadsByDateAndTag(t *testing.T) {
	now := time.Now()
	fresh := now.Add(-300 * time.Millisecond) // updated in this second, or the last
	settled := now.Add(-5 * time.Second)
	date := func(t time.Time) string { return t.UTC().Format(http.TimeFormat) }
	etagAt := func(updated time.Time) string {
		_, etag := productJSON((&productAt{updated: updated}).product())
		return etag
	}
	tests := []struct {
		name    string
		updated time.Time
		headers [][2]string
		status  int
		lastMod bool // a Last-Modified in the answer
	}{
		{"settled: Last-Modified given", settled, nil, 200, true},
		{"settled: If-Modified-Since its date is 304", settled, [][2]string{{"If-Modified-Since", date(settled)}}, 304, true},
		{"fresh: no Last-Modified", fresh, nil, 200, false},
		{"fresh: If-Modified-Since its second is the whole answer", fresh, [][2]string{{"If-Modified-Since", date(fresh)}}, 200, false},
		{"fresh: If-Modified-Since later is the whole answer", fresh, [][2]string{{"If-Modified-Since", date(now.Add(time.Hour))}}, 200, false},
		{"If-None-Match over two lines", settled, [][2]string{{"If-None-Match", `"other"`}, {"If-None-Match", etagAt(settled)}}, 304, true},
		{"If-Match current", settled, [][2]string{{"If-Match", etagAt(settled)}}, 200, true},
		{"If-Match current on a second line", settled, [][2]string{{"If-Match", `"other"`}, {"If-Match", etagAt(settled)}}, 200, true},
		{"If-Match *", settled, [][2]string{{"If-Match", "*"}}, 200, true},
		{"If-Match other", settled, [][2]string{{"If-Match", `"other"`}}, 412, false},
		{"If-Match weak never matches", settled, [][2]string{{"If-Match", "W/" + etagAt(settled)}}, 412, false},
		{"If-Match wins over If-Unmodified-Since", settled, [][2]string{{"If-Match", etagAt(settled)}, {"If-Unmodified-Since", date(settled.Add(-time.Hour))}}, 200, true},
		{"If-Match fails before If-None-Match is asked", settled, [][2]string{{"If-Match", `"other"`}, {"If-None-Match", etagAt(settled)}}, 412, false},
		{"settled: If-Unmodified-Since its date", settled, [][2]string{{"If-Unmodified-Since", date(settled)}}, 200, true},
		{"settled: If-Unmodified-Since before it", settled, [][2]string{{"If-Unmodified-Since", date(settled.Add(-time.Second))}}, 412, false},
		{"fresh: If-Unmodified-Since its second cannot tell", fresh, [][2]string{{"If-Unmodified-Since", date(fresh)}}, 412, false},
		{"unparsable If-Unmodified-Since is ignored", settled, [][2]string{{"If-Unmodified-Since", "yesterday"}}, 200, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/products/7", nil)
			for _, h := range tt.headers {
				req.Header.Add(h[0], h[1])
			}
			rec := httptest.NewRecorder()
			cachingRouter(&productAt{updated: tt.updated}).ServeHTTP(rec, req)
			lm := rec.Header().Get("Last-Modified")
			if rec.Code != tt.status || (lm != "") != tt.lastMod {
				t.Fatalf("status %d, Last-Modified %q; want %d, one given: %t (body %s)", rec.Code, lm, tt.status, tt.lastMod, rec.Body)
			}
			if tt.lastMod && lm != date(tt.updated) {
				t.Errorf("Last-Modified %q, want %q", lm, date(tt.updated))
			}
			if rec.Code == http.StatusPreconditionFailed && rec.Header().Get("Cache-Control") != "no-store" {
				t.Errorf("412 with Cache-Control %q, want no-store", rec.Header().Get("Cache-Control"))
			}
		})
	}
}

// TestIfUnmodifiedSinceOnWrites: a PUT's If-Unmodified-Since (without
// If-Match) becomes a precondition that holds only for a product unchanged
// since the date, and never while its last update's second is not over;
// If-Match, when sent, decides alone.
func TestIfUnmodifiedSinceOnWrites(t *testing.T) {
	now := time.Now()
	fresh, settled := now.Add(-300*time.Millisecond), now.Add(-5*time.Second)
	date := func(t time.Time) string { return t.UTC().Format(http.TimeFormat) }
	at := func(updated time.Time) repo.Product { return (&productAt{updated: updated}).product() }
	tests := []struct {
		name    string
		headers [][2]string
		current repo.Product
		want    bool
	}{
		{"unchanged since", [][2]string{{"If-Unmodified-Since", date(settled)}}, at(settled), true},
		{"changed since", [][2]string{{"If-Unmodified-Since", date(settled.Add(-time.Second))}}, at(settled), false},
		{"changed in the second it names", [][2]string{{"If-Unmodified-Since", date(fresh)}}, at(fresh), false},
		{"If-Match decides alone", [][2]string{{"If-Match", "*"}, {"If-Unmodified-Since", date(settled.Add(-time.Hour))}}, at(settled), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPut, "/products/7", nil)
			for _, h := range tt.headers {
				req.Header.Add(h[0], h[1])
			}
			precondition, err := writePreconditions(req)
			if err != nil || precondition == nil {
				t.Fatalf("writePreconditions: nil %t, error %v; want a precondition", precondition == nil, err)
			}
			if got := precondition(tt.current); got != tt.want {
				t.Errorf("precondition: %v, want %v", got, tt.want)
			}
		})
	}
	req := httptest.NewRequest(http.MethodPut, "/products/7", nil)
	req.Header.Set("If-Unmodified-Since", date(settled))
	if err := preconditionError(req, repo.ErrPreconditionFailed); err == nil || statusOf(err) != http.StatusPreconditionFailed {
		t.Errorf("a failed If-Unmodified-Since: %v, want a 412 naming it", err)
	}
	if err := preconditionError(req, repo.ErrPreconditionAbsent); err != repo.ErrNotFound {
		t.Errorf("If-Unmodified-Since on no product: %v, want the plain 404", err)
	}
}

// statusOf is the status a requestError carries, 0 for any other error.
func statusOf(err error) int {
	if re, ok := err.(*requestError); ok {
		return re.status
	}
	return 0
}
