package repo

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stampede-guard/api/db"
)

const (
	// knownCatchUpEvery bounds the upkeep's queries: one per second at
	// most, failed ones included, so a flood during a database outage
	// never becomes a query loop.
	knownCatchUpEvery = time.Second
	// knownCatchUpOverlap is how far below the sequence's last value a
	// catch-up looks again, for ids that committed out of order.
	knownCatchUpOverlap = 1000
	// knownCheckEvery is how often the upkeep asks PostgreSQL whether rows
	// were inserted that the filter has not seen (with ids of their own,
	// not the sequence's): one tiny query, not a re-read of the catalogue.
	knownCheckEvery = 10 * time.Minute
	// knownPage is how many ids one query of a load or a catch-up reads.
	knownPage = 50_000
)

type withConn interface {
	With(context.Context, func(db.Conn) error) error
}

// FilterUnknownIDs turns on the penetration defence: at most perSecond
// lookups per second, across every instance sharing the cache's Redis and
// namespace, of ids the filter does not know. It returns at once: the
// filter is loaded in the background, and until then
// every id takes the normal path. Call it once, before serving; stop ends
// the upkeep (call it before closing the pool).
func (p *Products) FilterUnknownIDs(perSecond float64) (stop func()) {
	return p.filterUnknownIDs(perSecond, knownCheckEvery)
}

func (p *Products) filterUnknownIDs(perSecond float64, checkEvery time.Duration) (stop func()) {
	k := &knownIDs{
		budget:     p.cache.NewQuota("unknown-id-lookups", int(perSecond)),
		wake:       make(chan struct{}, 1),
		checkEvery: checkEvery,
		log:        p.log,
	}
	p.known = k
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer k.stop()
		k.upkeep(ctx, p.pool)
	}()
	return func() { cancel(); <-done }
}

// FilterLoaded reports whether the unknown-id filter is answering (true
// when there is none): readiness shows it, and nothing waits for it.
func (p *Products) FilterLoaded() bool { return p.known == nil || p.known.loaded() }

// upkeep loads the filter (retrying once a second until it can), then
// catches up with new ids when a check asks for it and reloads when the
// table has rows the filter has not seen. It returns when ctx ends.
func (k *knownIDs) upkeep(ctx context.Context, pool withConn) {
	for failures := 0; ; failures++ {
		err := k.reload(ctx, pool)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return // stopped (a start that failed, a shutdown): not a failure to report
		}
		if failures%60 == 0 { // the first failure, then once a minute
			k.log.Warn("unknown-id filter: load failed; every id takes the normal path until it loads", "err", err, "tries", failures+1)
		}
		if !sleep(ctx, knownCatchUpEvery) {
			return
		}
	}
	check := time.NewTicker(k.checkEvery)
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-k.wake:
			_ = k.catchUp(ctx, pool) // a failure waits for the next wake
		case <-check.C:
			// New ids from other instances first: they are no reason to
			// reload.
			if k.catchUp(ctx, pool) == nil && k.behind(ctx, pool) {
				_ = k.reload(ctx, pool) // a failure waits for the next check
			}
		}
		if !sleep(ctx, knownCatchUpEvery) {
			return
		}
	}
}

// catchUp adds the ids the sequence handed out since the last look, from
// a little below the last line: ids are handed out before their
// transactions commit, so a lower id can appear after a higher one. Ids
// above the sequence (inserted with ids of their own) are left to
// lookups and the next reload: a catch-up reads only what the app
// created, however many rows an import put above it.
func (k *knownIDs) catchUp(ctx context.Context, pool withConn) error {
	k.mu.RLock()
	after := max(0, k.handedOut-knownCatchUpOverlap)
	k.mu.RUnlock()
	var upTo int64
	err := pool.With(ctx, func(conn db.Conn) (err error) {
		upTo, err = lastHandedOut(ctx, conn)
		return err
	})
	if err != nil {
		return err
	}
	var buf [8]byte
	for after < upTo {
		ids, err := idsBetween(ctx, pool, after, upTo, knownPage)
		if err != nil {
			return err
		}
		k.mu.Lock()
		for _, id := range ids {
			if !k.filter.TestAndAdd(idKey(&buf, id)) {
				k.ids++
			}
		}
		k.mu.Unlock()
		if len(ids) < knownPage {
			break
		}
		after = ids[len(ids)-1]
	}
	k.mu.Lock()
	k.handedOut = max(k.handedOut, upTo)
	k.mu.Unlock()
	return nil
}

// lastHandedOut is the last id the products' sequence handed out (0 when
// it has none yet, or none that this user may read: every unknown id is
// then looked up within the budget, never answered without a look).
func lastHandedOut(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (int64, error) {
	var n int64
	err := q.QueryRow(ctx, `SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('products', 'id')::regclass), 0)`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("products id sequence: %w", err)
	}
	return n, nil
}

// behind reports whether the table holds rows the filter may not have
// seen (inserted outside the app below the highest id, or the statistics
// reset by a restart or a failover), or more ids than it was sized for.
// PostgreSQL's insert counter answers it without reading the catalogue.
func (k *knownIDs) behind(ctx context.Context, pool withConn) bool {
	inserted, err := insertCount(ctx, pool)
	if err != nil {
		return false // the next check asks again
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	return inserted < k.inserted || uint(inserted-k.inserted) > k.ids-k.inStep || k.ids > k.capacity // #nosec G115 -- inserted ≥ k.inserted here
}

func insertCount(ctx context.Context, pool withConn) (int64, error) {
	var n int64
	err := pool.With(ctx, func(conn db.Conn) error {
		return conn.QueryRow(ctx, `SELECT coalesce(sum(n_tup_ins), 0)::bigint FROM pg_stat_user_tables WHERE relid = 'products'::regclass`).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("products insert count: %w", err)
	}
	return n, nil
}

// idsBetween reads up to limit product ids in (after, upTo], in order
// (keyset paging on the primary key).
func idsBetween(ctx context.Context, pool withConn, after, upTo int64, limit int) ([]int64, error) {
	ids := make([]int64, 0, 256)
	err := pool.With(ctx, func(conn db.Conn) error {
		rows, err := conn.Query(ctx, `SELECT id FROM products WHERE id > $1 AND id <= $2 ORDER BY id LIMIT $3`, after, upTo, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		var id int64 // one for every row: Scan's target escapes
		for rows.Next() {
			if err := rows.Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("product ids after %d: %w", after, err)
	}
	return ids, nil
}
