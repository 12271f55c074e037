package repo_test

import (
	"testing"
	"time"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/internal/hotkeys"
	"github.com/stampede-guard/api/repo"
)

// TestReadsCountedForHotKeys: with CountReads, every product read is
// counted under the product's cache key, the one the cache asks about.
func TestReadsCountedForHotKeys(t *testing.T) {
	t.Parallel()
	const id = 131
	products, _, _ := newProducts(t, db.Config{}, id)
	d := hotkeys.New(hotkeys.Config{Threshold: 1, Top: 4, Window: 100 * time.Millisecond})
	products.CountReads(d)
	// Rates appear when a window with reads ends: read until one has.
	deadline := time.Now().Add(5 * time.Second)
	for len(d.Top()) == 0 && time.Now().Before(deadline) {
		if _, _, err := products.Get(testCtx(t), id); err != nil {
			t.Fatalf("Get(%d): %v", id, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if top := d.Top(); len(top) == 0 || top[0].Key != repo.Key(id) || !d.Hot(repo.Key(id)) {
		t.Errorf("Top(): got %+v, want %s counted and hot", top, repo.Key(id))
	}
}
