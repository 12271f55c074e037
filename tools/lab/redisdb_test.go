package main

import (
	"context"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// TestLabRedisOwnership: the lab claims an empty database or its own, and
// refuses, without deleting anything, one that holds someone else's keys.
func TestLabRedisOwnership(t *testing.T) {
	ctx := context.Background()
	rdb := dbtest.EmptyRedis(t, 7) // flushRedis flushes it
	t.Cleanup(func() { rdb.Del(ctx, ownerKey) })
	if err := claimRedis(ctx, rdb); err != nil {
		t.Fatalf("claim an empty database: %v", err)
	}
	if err := rdb.Set(ctx, "lab-leftover", "x", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := flushRedis(ctx, rdb); err != nil {
		t.Fatalf("flush the lab's own database: %v", err)
	}
	if n := rdb.Exists(ctx, "lab-leftover", ownerKey).Val(); n != 1 {
		t.Fatalf("after flushRedis: %d of (leftover, mark) exist, want the mark only", n)
	}

	if err := rdb.Del(ctx, ownerKey).Err(); err != nil {
		t.Fatal(err)
	}
	user := "user:" + dbtest.Unique()
	if err := rdb.Set(ctx, user, "precious", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Del(ctx, user) })
	for name, f := range map[string]func() error{
		"claimRedis": func() error { return claimRedis(ctx, rdb) },
		"flushRedis": func() error { return flushRedis(ctx, rdb) },
	} {
		if err := f(); err == nil {
			t.Errorf("%s on a database with a key the lab did not write: nil error, want a refusal", name)
		}
		if rdb.Get(ctx, user).Val() != "precious" {
			t.Fatalf("%s deleted a key the lab did not write", name)
		}
	}
}
