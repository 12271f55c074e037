package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// ledger is what the soak's clients were told about their orders: for each
// Idempotency-Key, the ids of every 201 it got (a retry with the same key
// must get the same id back), and the keys that never got one.
type ledger struct {
	mu     sync.Mutex
	told   map[string][]int64
	gaveUp map[string]bool
}

func newLedger() *ledger {
	return &ledger{told: map[string][]int64{}, gaveUp: map[string]bool{}}
}

func (l *ledger) confirmed(key string, id int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.told[key] = append(l.told[key], id)
}

func (l *ledger) abandoned(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gaveUp[key] = true
}

// orderCheck compares the ledger with the rows PostgreSQL holds.
type orderCheck struct {
	Keys        int // keys that got a 201
	Replays     int // 201s beyond the first for a key (retries and deliberate repeats)
	Lost        int // a 201's id with no row for its key
	Duplicated  int // a key answered with two ids, or with two rows
	GaveUp      int // keys whose client stopped retrying without a 201
	Unconfirmed int // rows whose client never got a 201 (it gave up after the commit)
}

// checkOrders judges told (key → ids answered 201) against rows (key → ids
// stored with that key). A key must have at most one row, and every id it
// was told must be that row's.
func checkOrders(told, rows map[string][]int64, gaveUp int) orderCheck {
	c := orderCheck{GaveUp: gaveUp}
	for key, ids := range told {
		c.Keys++
		c.Replays += len(ids) - 1
		stored := rows[key]
		distinct := slices.Compact(slices.Sorted(slices.Values(ids)))
		if len(distinct) > 1 || len(stored) > 1 {
			c.Duplicated++
		}
		for _, id := range distinct {
			if !slices.Contains(stored, id) {
				c.Lost++
			}
		}
	}
	for key, stored := range rows {
		if _, ok := told[key]; !ok {
			c.Unconfirmed++
			if len(stored) > 1 {
				c.Duplicated++
			}
		}
	}
	return c
}

// check reads the orders the soak made (their keys start with prefix) from
// database name and compares them with what the clients were told.
func (l *ledger) check(ctx context.Context, pg *PG, name, prefix string) (orderCheck, error) {
	conn, err := pg.connect(ctx, name)
	if err != nil {
		return orderCheck{}, err
	}
	defer conn.Close(context.Background())
	rs, err := conn.Query(ctx, `SELECT idempotency_key, id FROM orders WHERE idempotency_key LIKE $1`, prefix+"%")
	if err != nil {
		return orderCheck{}, fmt.Errorf("read the soak's orders: %w", err)
	}
	rows := map[string][]int64{}
	for rs.Next() {
		var key string
		var id int64
		if err := rs.Scan(&key, &id); err != nil {
			return orderCheck{}, err
		}
		rows[key] = append(rows[key], id)
	}
	if err := rs.Err(); err != nil {
		return orderCheck{}, fmt.Errorf("read the soak's orders: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	gaveUp := 0
	for key := range l.gaveUp {
		if _, ok := l.told[key]; !ok {
			gaveUp++
		}
	}
	return checkOrders(l.told, rows, gaveUp), nil
}
