package dbtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// testDB is the logical database of this package's Redis tests.
const testDB = 6

// TestNamespaceDeletesOnlyItsOwnKeys: NewRedis flushes nothing, and the
// cleanup of Namespace deletes the keys under the namespace and no other.
func TestNamespaceDeletesOnlyItsOwnKeys(t *testing.T) {
	ctx := context.Background()
	rdb := dbtest.NewRedis(t, testDB)
	// A key that stands for a user's data, and one that looks alike.
	other := "user:" + dbtest.Unique()
	if err := rdb.Set(ctx, other, "keep", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Del(ctx, other) })

	var ns string
	t.Run("inner", func(t *testing.T) {
		dbtest.NewRedis(t, testDB)
		ns = dbtest.Namespace(t, testDB)
		lookalike := ns + "x:k" // same characters, not under "<ns>:"
		for _, k := range []string{ns + ":a", ns + ":lock:b", lookalike} {
			if err := rdb.Set(ctx, k, "v", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Cleanup(func() { rdb.Del(ctx, ns+"x:k") })
	for k, want := range map[string]int64{other: 1, ns + "x:k": 1, ns + ":a": 0, ns + ":lock:b": 0} {
		if got := rdb.Exists(ctx, k).Val(); got != want {
			t.Errorf("after the subtest: EXISTS %s = %d, want %d", k, got, want)
		}
	}
}
