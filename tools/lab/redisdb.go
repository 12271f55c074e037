package main

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// ownerKey marks the lab's Redis database as the lab's: the lab flushes it
// between clusters, and refuses to when it holds keys without this mark
// (someone else's data, not the lab's leftovers).
const ownerKey = "stampede-guard:lab-owner"

// claimRedis makes rdb's database the lab's: an empty database, or one the
// lab marked earlier, gets the mark; any other is refused, untouched.
func claimRedis(ctx context.Context, rdb *redis.Client) error {
	size, err := rdb.DBSize(ctx).Result()
	if err != nil {
		return fmt.Errorf("redis: DBSIZE: %w", err)
	}
	if size > 0 {
		n, err := rdb.Exists(ctx, ownerKey).Result()
		if err != nil {
			return fmt.Errorf("redis: EXISTS %s: %w", ownerKey, err)
		}
		if n == 0 {
			return fmt.Errorf("redis db %d holds %d keys the lab did not write (no %s key): the lab flushes its database between experiments, so give it an empty one (-redis with another server or empty db %d)",
				rdb.Options().DB, size, ownerKey, rdb.Options().DB)
		}
	}
	return rdb.Set(ctx, ownerKey, "1", 0).Err()
}

// flushRedis empties the lab's database and marks it again. It refuses,
// like claimRedis, a database that is not the lab's.
func flushRedis(ctx context.Context, rdb *redis.Client) error {
	if err := claimRedis(ctx, rdb); err != nil {
		return err
	}
	if err := rdb.FlushDB(ctx).Err(); err != nil {
		return fmt.Errorf("flush redis db %d: %w", rdb.Options().DB, err)
	}
	return rdb.Set(ctx, ownerKey, "1", 0).Err()
}
