package app

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/telemetry"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestRedisStart: a Redis that cannot be reached is ridden out (the
// service answers from the database meanwhile), but one that answers and
// refuses REDIS_URL's user, password or database (or is no cluster
// though REDIS_CLUSTER_ADDRS says so) stops the start with an error naming
// REDIS_URL, as a wrong DATABASE_URL does. It used to log a
// warning and serve degraded for good.
func TestRedisStart(t *testing.T) {
	t.Parallel()
	good, err := url.Parse(dbtest.RedisDBURL(redisDB))
	if err != nil {
		t.Fatal(err)
	}
	wrongUser, noSuchDB, unreachable, dbZero := *good, *good, *good, *good
	dbZero.Path = "/0" // with cluster seeds: a cluster has database 0 only
	wrongUser.User = url.UserPassword("nobody-"+dbtest.Unique(), "wrong")
	noSuchDB.Path = "/99" // a default server has 16
	unreachable.Host = "127.0.0.1:1"
	for _, tc := range []struct {
		name, url, cluster string
		wantErr            bool
	}{
		{"reachable", good.String(), "", false},
		{"unreachable", unreachable.String(), "", false},
		{"unknown user", wrongUser.String(), "", true},
		{"no such database", noSuchDB.String(), "", true},
		{"cluster seeds on a lone server", dbZero.String(), dbtest.RedisAddr(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadConfig(envOf(map[string]string{"REDIS_URL": tc.url, "REDIS_CLUSTER_ADDRS": tc.cluster}))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			tr, err := telemetry.NewTracing(ctx, cfg.Tracing)
			if err != nil {
				t.Fatal(err)
			}
			d := &deps{cfg: cfg, log: dbtest.Logger(t)}
			err = d.openRedis(ctx, tr)
			d.close()
			switch {
			case tc.wantErr && (err == nil || !strings.Contains(err.Error(), "REDIS_URL")):
				t.Errorf("openRedis: got %v, want an error naming REDIS_URL", err)
			case !tc.wantErr && err != nil:
				t.Errorf("openRedis: got %v, want the start to go on", err)
			}
		})
	}
}
