package handlers

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/repo"
)

// TestAgeLeavesMaxAgeTheTimeLeft: whatever max-age a public answer carries,
// max-age − Age is the time its entry has left here (never more than
// max-age), so a downstream copy neither outlives this cache's nor arrives
// stale when it was loaded a moment ago.
func TestAgeLeavesMaxAgeTheTimeLeft(t *testing.T) {
	const s = time.Second
	tests := []struct {
		name     string
		hc       HTTPCache
		f        repo.Freshness
		notFound bool
		wantCC   string
		wantAge  string // "" = no Age header
	}{
		// max-age following the cache: Age is the time since the load,
		// plus the jitter's cut.
		{"found, max-age is the entry's life", HTTPCache{Enabled: true, MaxAge: 30 * s},
			repo.Freshness{Status: cache.Hit, TTL: 20 * s, Age: 10 * s}, false, "public, max-age=30", "10"},
		{"404, max-age is the negative TTL", HTTPCache{Enabled: true, MaxAge: 600 * s, NotFoundMaxAge: 30 * s},
			repo.Freshness{Status: cache.Hit, TTL: 5 * s, Age: 25 * s}, true, "public, max-age=30", "25"},
		// A 404 kept 20 minutes here, just loaded (its jitter cut 96 s), and
		// max-age capped at 30 s: it was Age 96, stale on arrival.
		{"404 just loaded, max-age capped below its TTL", HTTPCache{Enabled: true, MaxAge: 30 * s, NotFoundMaxAge: 30 * s},
			repo.Freshness{Status: cache.Miss, TTL: 1104 * s, Age: 96 * s}, true, "public, max-age=30", ""},
		{"404 with less left than its capped max-age", HTTPCache{Enabled: true, MaxAge: 30 * s, NotFoundMaxAge: 30 * s},
			repo.Freshness{Status: cache.Hit, TTL: 12 * s, Age: 1188 * s}, true, "public, max-age=30", "18"},
		// HTTP_MAX_AGE shorter than the soft TTL: fresh downstream for it.
		{"found, HTTP_MAX_AGE shorter", HTTPCache{Enabled: true, MaxAge: 30 * s},
			repo.Freshness{Status: cache.Hit, TTL: 240 * s, Age: 60 * s}, false, "public, max-age=30", ""},
		// HTTP_MAX_AGE longer than the entry's life: never past this copy.
		{"found, HTTP_MAX_AGE longer", HTTPCache{Enabled: true, MaxAge: 3600 * s},
			repo.Freshness{Status: cache.Hit, TTL: 100 * s, Age: 200 * s}, false, "public, max-age=3600", "3500"},
		// Rounded up: max-age 3 with 0.4 s left said Age 2, a second
		// downstream for 0.4 s here.
		{"less than a second left", HTTPCache{Enabled: true, MaxAge: 3 * s},
			repo.Freshness{Status: cache.Hit, TTL: 400 * time.Millisecond, Age: 0}, false, "public, max-age=3", "3"},
		{"loaded a moment ago", HTTPCache{Enabled: true, MaxAge: 30 * s},
			repo.Freshness{Status: cache.Miss, TTL: 29*s + 990*time.Millisecond}, false, "public, max-age=30", ""},
		{"stale", HTTPCache{Enabled: true, MaxAge: 30 * s},
			repo.Freshness{Status: cache.Stale, TTL: -3 * s, Age: 33 * s}, false, "public, max-age=30", "33"},
		// A 404 not looked up (an unknown id past the lookup budget) is a
		// guess: no one may keep it, whatever HTTP caching allows.
		{"404 not looked up", HTTPCache{Enabled: true, MaxAge: 600 * s, NotFoundMaxAge: 30 * s},
			repo.Freshness{Status: cache.Miss, Unsure: true}, true, "no-store", ""},
		// Not for shared caches: the time since the load, as it is.
		{"no-store", HTTPCache{},
			repo.Freshness{Status: cache.Hit, TTL: 1104 * s, Age: 96 * s}, true, "no-store", "96"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := answerProducts{f: tt.f}
			if tt.notFound {
				store.err = repo.ErrNotFound
			}
			gin.SetMode(gin.TestMode)
			r := gin.New()
			r.GET("/products/:id", NewProducts(store, tt.hc, slog.New(slog.NewTextHandler(io.Discard, nil))).get)
			rec := httptest.NewRecorder()
			r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/products/1", nil))
			if got := rec.Header().Get("Cache-Control"); got != tt.wantCC {
				t.Errorf("Cache-Control %q, want %q", got, tt.wantCC)
			}
			if got := rec.Header().Get("Age"); got != tt.wantAge {
				t.Errorf("Age %q, want %q", got, tt.wantAge)
			}
		})
	}
}
