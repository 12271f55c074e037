package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestBareLookupRefusesAfterOneGet: the refusal experiment's second floor
// answers from Redis when the product's key is there and refuses with a
// 503 and Retry-After when it is not: the refusal comes after the GET.
func TestBareLookupRefusesAfterOneGet(t *testing.T) {
	ctx := context.Background()
	rdb := dbtest.NewRedis(t, 7) // this package's database (TestLabRedisOwnership)
	stored := "t" + dbtest.Unique()
	if err := rdb.Set(ctx, bareLookupKey(stored), `{"id":7}`, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Del(context.Background(), bareLookupKey(stored)) })

	gin.SetMode(gin.ReleaseMode)
	engine := gin.New()
	engine.GET("/products/:id", bareLookup(rdb))
	cases := []struct {
		name, id   string
		status     int
		body       string
		retryAfter bool
	}{
		{"stored: served", stored, http.StatusOK, `{"id":7}`, false},
		{"absent: refused after the GET", "absent" + dbtest.Unique(), http.StatusServiceUnavailable, `{"error":"temporarily unavailable, retry later"}`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			engine.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/products/"+tc.id, nil))
			if w.Code != tc.status || w.Body.String() != tc.body || (w.Header().Get("Retry-After") != "") != tc.retryAfter {
				t.Fatalf("GET /products/%s: %d %q Retry-After %q, want %d %q (Retry-After set: %v)",
					tc.id, w.Code, w.Body, w.Header().Get("Retry-After"), tc.status, tc.body, tc.retryAfter)
			}
		})
	}
}
