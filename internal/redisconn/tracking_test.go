package redisconn_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/internal/redisconn"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestTrackingHearsOtherClients: a write by another client to a key under
// the tracked prefix is reported on the tracking connection, a key outside
// it is not; after Renew a new connection reports again (tracking turned on
// by its dial), and after Close, Renew refuses.
func TestTrackingHearsOtherClients(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := dbtest.NewRedis(t, redisDB)
	prefix, other := newPrefix(), newPrefix()
	t.Cleanup(func() {
		dbtest.DeletePrefix(t, rdb, prefix)
		dbtest.DeletePrefix(t, rdb, other)
	})
	base := rdb.Options()
	base.ClientName = "t" + dbtest.Unique() + ":tracking"
	tr, err := redisconn.OpenTracking(ctx, base, []string{prefix})
	if err != nil {
		t.Fatalf("OpenTracking: %v", err)
	}
	defer tr.Close()
	first := tr.ID()
	if first == 0 {
		t.Fatal("ID after a confirmed subscription: got 0, want the connection's CLIENT ID")
	}

	expect := func(key string) {
		t.Helper()
		if err := rdb.Set(ctx, other+"x", "v", time.Minute).Err(); err != nil { // untracked: no report
			t.Fatal(err)
		}
		if err := rdb.Set(ctx, key, "v", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		for {
			msg, err := tr.Current().Receive(rctx)
			if err != nil {
				t.Fatalf("waiting for the report of %s: %v", key, err)
			}
			m, ok := msg.(*redis.Message)
			if !ok {
				continue // the (re)subscription's confirmation
			}
			if m.Channel != redisconn.TrackingChannel || len(m.PayloadSlice) != 1 || m.PayloadSlice[0] != key {
				t.Fatalf("report: got %q on %s, want only %s", m.PayloadSlice, m.Channel, key)
			}
			return
		}
	}
	expect(prefix + "a")
	if !tr.Renew(ctx) {
		t.Fatal("Renew before Close: got false")
	}
	expect(prefix + "b") // also dials the new connection
	if tr.ID() == first {
		t.Errorf("ID after Renew: still %d, want the new connection's", first)
	}
	tr.Close()
	if tr.Renew(ctx) {
		t.Error("Renew after Close: got true")
	}
}
