package repo_test

import (
	"bytes"
	"encoding/json"
	"sync"
	"testing"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/repo"
)

// TestCacheSigningKeySharedByTheFleet: instances starting together on one
// database all get the same generated key (the first insert wins), a
// restart gets it again, and deleting the row (the documented rotation)
// makes a new one.
func TestCacheSigningKeySharedByTheFleet(t *testing.T) {
	t.Parallel()
	_, _, pool := newProducts(t, db.Config{})
	keys := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			k, err := repo.CacheSigningKey(testCtx(t), pool)
			if err != nil {
				t.Errorf("instance %d: %v", i, err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	for i, k := range keys {
		if len(k) < 32 || !bytes.Equal(k, keys[0]) {
			t.Fatalf("instance %d got a key of %d bytes (equal to the first: %t), want one shared key of ≥ 32 bytes",
				i, len(k), bytes.Equal(k, keys[0]))
		}
	}
	again, err := repo.CacheSigningKey(testCtx(t), pool)
	if err != nil || !bytes.Equal(again, keys[0]) {
		t.Fatalf("after a restart: %x, %v; want the stored key", again, err)
	}
	exec(t, pool, `DELETE FROM cache_signing_key`)
	rotated, err := repo.CacheSigningKey(testCtx(t), pool)
	if err != nil || len(rotated) < 32 || bytes.Equal(rotated, keys[0]) {
		t.Fatalf("after deleting the row: %x, %v; want a new key", rotated, err)
	}
}

// TestEntryVersion: a cached product's version is its updated_at in
// microseconds, and every update moves it strictly forward.
func TestEntryVersion(t *testing.T) {
	t.Parallel()
	const id = 621
	products, _, pool := newProducts(t, db.Config{}, id)
	// A row whose updated_at is in the future (a clock step back, a
	// restore): the next update must still move its version forward.
	exec(t, pool, `UPDATE products SET updated_at = now() + interval '1 hour' WHERE id = $1`, id)
	before := seededProduct(t, pool, id)
	body, _ := json.Marshal(before)
	v0 := repo.EntryVersion(body)
	if v0 != uint64(before.UpdatedAt.UnixMicro()) {
		t.Fatalf("version %d, want updated_at in µs %d", v0, before.UpdatedAt.UnixMicro())
	}
	after, err := products.Update(testCtx(t), id, repo.ProductUpdate{Name: before.Name, PriceCents: before.PriceCents + 1})
	if err != nil {
		t.Fatal(err)
	}
	body, _ = json.Marshal(after)
	if v1 := repo.EntryVersion(body); v1 <= v0 {
		t.Errorf("after an update: version %d, want > %d", v1, v0)
	}
	if repo.EntryVersion([]byte("not json")) != 0 {
		t.Errorf("a payload that does not decode: want version 0")
	}
}
