package app

import (
	"bytes"
	"context"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestMaintenanceDatabaseWarned: a start on the server's maintenance
// database warns, naming it; a start on a database of the app's own does
// not. Read-only: the check is one SELECT, nothing is created in postgres.
func TestMaintenanceDatabaseWarned(t *testing.T) {
	t.Parallel()
	admin, err := url.Parse(dbtest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	admin.Path = "/postgres"
	own := dbtest.NewPool(t, "app", db.Config{MaxConns: 2})
	for _, tc := range []struct {
		name string
		pool func() *db.Pool
		want bool
	}{
		{"postgres", func() *db.Pool {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			p, err := db.Open(ctx, db.Config{URL: admin.String(), MaxConns: 2})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Close)
			return p
		}, true},
		{"its own", func() *db.Pool { return own }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			warnMaintenanceDB(t.Context(), tc.pool(), slog.New(slog.NewJSONHandler(&buf, nil)))
			if got := strings.Contains(buf.String(), "maintenance database"); got != tc.want {
				t.Errorf("warned %v, want %v (log %q)", got, tc.want, buf.String())
			}
		})
	}
}
