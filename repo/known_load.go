package repo

import (
	"context"
	"fmt"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/jackc/pgx/v5"

	"github.com/stampede-guard/api/db"
)

// reload builds a new filter from every id and swaps it in; the old one
// answers meanwhile. Every query of a reload comes before the swap, so once
// the filter answers, its load has left the database alone.
func (k *knownIDs) reload(ctx context.Context, pool withConn) error {
	start := time.Now()
	l, err := loadIDs(ctx, pool)
	if err != nil {
		return err
	}
	swapped := false
	defer func() {
		if !swapped {
			l.free()
		}
	}()
	// The insert count the filter is in step with. Ids committed during
	// the load but not seen by its snapshot are above handedOut (read
	// before the snapshot), or a little below it when handed out before
	// and committed after: check looks both up, and catch-ups look again
	// from knownCatchUpOverlap below handedOut.
	inserted, err := insertCount(ctx, pool)
	if err != nil {
		return err
	}
	k.mu.Lock()
	old := k.free
	k.filter, k.free, k.capacity, k.ids, k.handedOut = l.filter, l.free, l.capacity, l.ids, l.handedOut
	k.inserted, k.inStep = inserted, l.ids
	k.mu.Unlock()
	swapped = true
	if old != nil {
		old() // every reader of the old filter held the read lock: none is left
	}
	// The load's garbage (a page of rows at a time) is the only large
	// transient this process makes; give it back now rather than keep it
	// until the next collections get to it (at GOGC=400, a while).
	debug.FreeOSMemory()
	k.log.Info("unknown-id filter loaded", "ids", l.ids, "bytes", l.filter.Cap()/8, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// loaded is one full read of the product ids.
type loadedIDs struct {
	filter    *bloom.BloomFilter
	free      func()
	capacity  uint
	ids       uint
	handedOut int64 // the id sequence's last value, read before the ids
}

// fetchIDs adds the next page of the cursor known_ids to l and says how
// many ids it held.
func fetchIDs(ctx context.Context, tx pgx.Tx, l *loadedIDs, buf *[8]byte) (int, error) {
	rows, err := tx.Query(ctx, `FETCH `+strconv.Itoa(knownPage)+` FROM known_ids`)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	var id int64 // one for every row: Scan's target escapes
	for rows.Next() {
		if err := rows.Scan(&id); err != nil {
			return n, err
		}
		l.filter.Add(idKey(buf, id))
		l.ids++
		n++
	}
	return n, rows.Err()
}

func loadIDs(ctx context.Context, pool withConn) (loadedIDs, error) {
	var estimate int64
	err := pool.With(ctx, func(conn db.Conn) error {
		// The planner's row estimate sizes the filter without counting;
		// behind() resizes it when the catalogue outgrows it.
		return conn.QueryRow(ctx, `SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = 'products'::regclass`).Scan(&estimate)
	})
	if err != nil {
		return loadedIDs{}, fmt.Errorf("size the id filter: %w", err)
	}
	capacity := max(uint(estimate)+uint(estimate)/4, 1<<16) // #nosec G115 -- greatest(…, 0): never negative
	f, free, err := newFilter(capacity)
	if err != nil {
		return loadedIDs{}, err
	}
	l := loadedIDs{filter: f, free: free, capacity: capacity}
	var buf [8]byte
	// One snapshot, read through a cursor a page at a time: memory holds the
	// filter, never the list of ids, and each FETCH is a statement of its
	// own, well within DB_STATEMENT_TIMEOUT however big the catalogue. A
	// full read is a sequential scan; the planner is told so, since on an
	// all-visible table it may pick an index-only scan of the primary key,
	// which would also show in products_pkey's statistics as product reads.
	err = pool.With(ctx, func(conn db.Conn) error {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(ctx) }() // read-only: nothing to commit
		// Before the snapshot: every id handed out before this read
		// either committed before the snapshot or is among the few a
		// catch-up looks at again.
		if l.handedOut, err = lastHandedOut(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SET LOCAL enable_indexonlyscan = off; SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off;
			DECLARE known_ids NO SCROLL CURSOR FOR SELECT id FROM products`); err != nil {
			return err
		}
		for {
			page, err := fetchIDs(ctx, tx, &l, &buf)
			if err != nil || page < knownPage {
				return err
			}
		}
	})
	if err != nil {
		free()
		return loadedIDs{}, fmt.Errorf("load the id filter: %w", err)
	}
	return l, nil
}
