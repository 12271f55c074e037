package cache_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-guard/api/cache"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
)

// A read-through cache in front of a slow source: the first Fetch of a key
// loads it and stores it in Redis, the next one is a hit.
func ExampleNew() {
	ctx := context.Background()
	rdb, ns, cleanup := exampleRedis()
	defer cleanup()

	c := cache.New(ctx, rdb, cache.Config{Namespace: ns}, slog.New(slog.DiscardHandler))
	defer c.Close() // stops background refreshes before the client closes

	load := func(ctx context.Context) ([]byte, error) {
		return []byte("widget"), nil // the database query
	}
	for range 2 {
		r, err := c.Fetch(ctx, "product:{1}", load)
		if err != nil {
			fmt.Println("fetch:", err)
			return
		}
		fmt.Println(string(r.Value), r.Status)
	}
	// Output:
	// widget MISS
	// widget HIT
}

// A write goes through Set, which every later read sees; Invalidate drops
// the key everywhere, so the next read loads it from the source again.
func ExampleCache_Set() {
	ctx := context.Background()
	rdb, ns, cleanup := exampleRedis()
	defer cleanup()
	c := cache.New(ctx, rdb, cache.Config{Namespace: ns}, slog.New(slog.DiscardHandler))
	defer c.Close()

	source := "v1"
	load := func(ctx context.Context) ([]byte, error) { return []byte(source), nil }
	if err := c.Set(ctx, "config:{motd}", []byte("hello")); err != nil {
		fmt.Println("set:", err)
		return
	}
	r, _ := c.Fetch(ctx, "config:{motd}", load)
	fmt.Println(string(r.Value), r.Status)

	source = "v2"
	if err := c.Invalidate(ctx, "config:{motd}"); err != nil {
		fmt.Println("invalidate:", err)
		return
	}
	r, _ = c.Fetch(ctx, "config:{motd}", load)
	fmt.Println(string(r.Value), r.Status)
	// Output:
	// hello HIT
	// v2 MISS
}

// Modes come from configuration as text; ParseMode refuses a name it does
// not know instead of silently running without protection.
func ExampleParseMode() {
	for _, s := range []string{"swr", "lock", "fastest"} {
		m, err := cache.ParseMode(s)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Println("mode:", m)
	}
	// Output:
	// mode: swr
	// mode: lock
	// error: unknown cache mode "fastest" (want naive, singleflight, lock, swr or xfetch)
}

// exampleRedis connects to REDIS_URL (this package's logical database) and
// returns a Namespace of the example's own; cleanup deletes the keys under
// it and closes the client.
func exampleRedis() (rdb *redis.Client, ns string, cleanup func()) {
	opt, err := redis.ParseURL(dbtest.RedisURL())
	if err != nil {
		panic(fmt.Sprintf("REDIS_URL: %v", err))
	}
	opt.DB = redisDB
	rdb = redis.NewClient(opt)
	ns = "example" + dbtest.Unique() + ":"
	return rdb, ns, func() {
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, ns+"*", 1000).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
		_ = rdb.Close()
	}
}
