package repo_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/repo"
)

// TestUnknownIDPastTheBudgetIsReadFromTheCache: with the fleet's lookup
// budget spent, an instance whose filter has not yet read a product that
// another instance created a moment ago answers it from Redis, where the
// creating write put it; it answered 404 (publicly cacheable) without
// looking. An id the cache does not hold is still "not found" without a
// query, marked Unsure, since it was not looked up.
func TestUnknownIDPastTheBudgetIsReadFromTheCache(t *testing.T) {
	t.Parallel()
	pool := dbtest.NewPool(t, "repo", db.Config{MaxConns: 4})
	ctx := testCtx(t)
	ns := dbtest.Namespace(t, redisDB)
	rdb := dbtest.NewRedis(t, redisDB)
	fleet := newFleet(t, pool, ns, 2)
	creator, reader := fleet[0], fleet[1]
	// No periodic catch-up in the test's time: only a request over the
	// budget wakes one, after its own answer.
	filterLoaded(t, reader, reader.FilterUnknownIDsCheckingEvery(1, time.Hour))

	// The fleet's budget, spent for the next minute.
	now := time.Now().Unix()
	for s := now; s < now+60; s++ {
		key := ns + ":quota:unknown-id-lookups:" + strconv.FormatInt(s, 10)
		if err := rdb.Set(ctx, key, 1_000_000, 2*time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}

	created, err := creator.Create(ctx, repo.NewProduct{Name: "made elsewhere", PriceCents: 100, Stock: 5})
	if err != nil {
		t.Fatal(err)
	}
	got, f, err := reader.Get(ctx, created.ID)
	if err != nil || got.Name != "made elsewhere" {
		t.Fatalf("Get(%d) on the other instance, past the budget: %+v %+v %v, want the product from the cache", created.ID, got, f, err)
	}
	if f.Unsure {
		t.Errorf("Get(%d): a product found is not a guess (%+v)", created.ID, f)
	}

	never := created.ID + 1000
	before := pool.Stat().AcquireCount()
	_, f, err = reader.Get(ctx, never)
	if !errors.Is(err, repo.ErrNotFound) || !f.Unsure {
		t.Errorf("Get(%d), never created, past the budget: %+v %v, want ErrNotFound marked Unsure", never, f, err)
	}
	// The catch-up the over-budget read woke may query; the read itself
	// did not, so at most that one.
	if q := pool.Stat().AcquireCount() - before; q > 1 {
		t.Errorf("Get(%d) past the budget: %d queries, want none of its own", never, q)
	}
}
