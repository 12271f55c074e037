package repo_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/internal/testkit/netproxy"
	"github.com/stampede-guard/api/repo"
)

// TestLostCommitAnswer: the link drops while PostgreSQL runs a write's
// COMMIT (a deferred trigger makes it slow), so the COMMIT is applied and
// its answer lost; new connections work at once. pgx reports that as "conn
// closed", safe to retry, so the write was answered 503 and repeated:
// stock adjustments applied two or three times, an unkeyed order placed
// while the answer said nothing was. Now: an unkeyed write is
// ErrOutcomeUnknown, applied once, and its product entry is refreshed
// from what committed; a keyed order is repeated, which replays it.
func TestLostCommitAnswer(t *testing.T) {
	t.Parallel()
	const product = 77
	tests := []struct {
		name    string
		table   string // whose commit is slow
		write   func(ctx context.Context, p *repo.Products, o *repo.Orders) error
		unknown bool   // else: the write succeeds
		applied string // counts 1 when the write was applied exactly once
	}{
		{"a stock adjustment", "products",
			func(ctx context.Context, p *repo.Products, _ *repo.Orders) error {
				five := int32(5)
				_, err := p.Update(ctx, product, repo.ProductUpdate{Name: "outcome-lost", PriceCents: 1, StockDelta: &five})
				return err
			},
			true, `SELECT count(*) FROM products WHERE id = 77 AND stock = 105 AND name = 'outcome-lost'`},
		{"an order without a key", "orders",
			func(ctx context.Context, _ *repo.Products, o *repo.Orders) error {
				_, _, err := o.Create(ctx, repo.NewOrder{ProductID: product, Quantity: 1})
				return err
			},
			true, `SELECT count(*) FROM orders WHERE product_id = 77 AND (SELECT stock FROM products WHERE id = 77) = 99`},
		{"an order with a key", "orders",
			func(ctx context.Context, _ *repo.Products, o *repo.Orders) error {
				_, _, err := o.Create(ctx, repo.NewOrder{ProductID: product, Quantity: 1, IdempotencyKey: "lost-" + dbtest.Unique()})
				return err
			},
			false, `SELECT count(*) FROM orders WHERE product_id = 77 AND (SELECT stock FROM products WHERE id = 77) = 99`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cut := &commitCut{}
			direct, viaLink, link := slowCancelPools(t, cut.observe)
			cut.link = link
			exec(t, direct, `UPDATE products SET stock = 100 WHERE id = 77`)
			exec(t, direct, `CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS
				$$ BEGIN PERFORM pg_sleep(1); RETURN NULL; END $$`)
			exec(t, direct, `CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT OR UPDATE ON `+tt.table+`
				DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit()`)
			products := repo.NewProducts(viaLink, newCache(t), dbtest.Logger(t))
			orders := repo.NewOrders(viaLink, nil)
			before, _, err := products.Get(testCtx(t), product) // cached, as a reader left it
			if err != nil {
				t.Fatal(err)
			}

			cut.armed.Store(true)
			err = tt.write(testCtx(t), products, orders)
			cut.wg.Wait()
			switch {
			case tt.unknown && (!errors.Is(err, repo.ErrOutcomeUnknown) || errors.Is(err, repo.ErrUnavailable)):
				t.Fatalf("got %v, want ErrOutcomeUnknown (and not ErrUnavailable)", err)
			case !tt.unknown && err != nil:
				t.Fatalf("got %v, want the order (its key replays it)", err)
			case cut.armed.Load():
				t.Fatal("the link saw no COMMIT to cut")
			}
			// Applied once, not repeated: give a repeat the time to land.
			time.Sleep(1500 * time.Millisecond)
			if got := queryInt(t, direct, tt.applied); got != 1 {
				t.Errorf("%s: %d, want 1 (applied exactly once)", tt.applied, got)
			}
			// What a client told to read it back sees: what committed.
			after, _, err := products.Get(testCtx(t), product)
			if err != nil {
				t.Fatal(err)
			}
			if tt.table == "products" && after.Name != "outcome-lost" {
				t.Errorf("read back after the unknown outcome: %q (was %q), want what committed", after.Name, before.Name)
			}
		})
	}
}

// commitCut drops every connection of its link 100 ms after the first
// COMMIT crosses it once armed, while the server runs that COMMIT, and
// lets new connections in at once: the COMMIT is applied and its answer
// lost.
type commitCut struct {
	armed atomic.Bool
	link  *netproxy.Proxy
	wg    sync.WaitGroup
}

func (c *commitCut) observe() func([]byte) {
	return func(b []byte) {
		if !bytes.Contains(bytes.ToLower(b), []byte("commit")) || !c.armed.CompareAndSwap(true, false) {
			return
		}
		c.wg.Go(func() {
			time.Sleep(100 * time.Millisecond)
			c.link.SetDown(true)
			c.link.SetDown(false)
		})
	}
}
