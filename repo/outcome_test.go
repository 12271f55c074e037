package repo_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stampede-guard/api/db"
	"github.com/stampede-guard/api/internal/testkit/dbtest"
	"github.com/stampede-guard/api/internal/testkit/netproxy"
	"github.com/stampede-guard/api/migrations"
	"github.com/stampede-guard/api/repo"
)

// TestWriteOutcome: a write whose last step (a self-committing INSERT, a
// COMMIT) was sent and never answered within the caller's deadline may
// still commit, and does here, so it is ErrOutcomeUnknown and never
// ErrUnavailable ("retry later", which the client follows and so would
// apply it twice). A write stopped before its COMMIT rolled back: that one
// is unavailable, and nothing of it is left.
func TestWriteOutcome(t *testing.T) {
	t.Parallel()
	const product = 77
	tests := []struct {
		name string
		// hold makes the write's slow step slow: run on a connection of
		// its own (direct), or holding the write's pool (viaLink), it
		// returns what lets the write go on.
		hold    func(t *testing.T, direct, viaLink *db.Pool) (release func())
		write   func(ctx context.Context, products *repo.Products, orders *repo.Orders) error
		unknown bool
		applied string // a query counting what the write leaves behind, once it has finished
	}{
		{"a product INSERT held by a table lock",
			func(t *testing.T, pool, _ *db.Pool) func() {
				return holdTx(t, pool, `LOCK TABLE products IN SHARE MODE`)
			},
			func(ctx context.Context, p *repo.Products, _ *repo.Orders) error {
				_, err := p.Create(ctx, repo.NewProduct{Name: "outcome-insert", PriceCents: 1})
				return err
			},
			true, `SELECT count(*) FROM products WHERE name = 'outcome-insert'`},
		{"an order's COMMIT held by a deferred trigger",
			func(t *testing.T, pool, _ *db.Pool) func() {
				exec(t, pool, `CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS
					$$ BEGIN PERFORM pg_sleep(0.8); RETURN NULL; END $$`)
				exec(t, pool, `CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON orders
					DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit()`)
				return func() {}
			},
			func(ctx context.Context, _ *repo.Products, o *repo.Orders) error {
				_, _, err := o.Create(ctx, repo.NewOrder{ProductID: product, Quantity: 1})
				return err
			},
			true, `SELECT count(*) FROM orders WHERE product_id = 77`},
		{"an order's stock UPDATE held by a row lock, before its COMMIT",
			func(t *testing.T, pool, _ *db.Pool) func() {
				return holdTx(t, pool, `SELECT 1 FROM products WHERE id = 77 FOR UPDATE`)
			},
			func(ctx context.Context, _ *repo.Products, o *repo.Orders) error {
				_, _, err := o.Create(ctx, repo.NewOrder{ProductID: product, Quantity: 1})
				return err
			},
			false, `SELECT count(*) FROM orders WHERE product_id = 77`},
		{"a product UPDATE held by a row lock, before its COMMIT",
			func(t *testing.T, pool, _ *db.Pool) func() {
				return holdTx(t, pool, `SELECT 1 FROM products WHERE id = 77 FOR UPDATE`)
			},
			func(ctx context.Context, p *repo.Products, _ *repo.Orders) error {
				_, err := p.Update(ctx, product, repo.ProductUpdate{Name: "outcome-update", PriceCents: 1})
				return err
			},
			false, `SELECT count(*) FROM products WHERE name = 'outcome-update'`},
		{"a product UPDATE waiting for a connection",
			func(t *testing.T, _, viaLink *db.Pool) func() { return holdPool(t, viaLink) },
			func(ctx context.Context, p *repo.Products, _ *repo.Orders) error {
				_, err := p.Update(ctx, product, repo.ProductUpdate{Name: "outcome-queued", PriceCents: 1})
				return err
			},
			false, `SELECT count(*) FROM products WHERE name = 'outcome-queued'`},
		{"an order waiting for a connection",
			func(t *testing.T, _, viaLink *db.Pool) func() { return holdPool(t, viaLink) },
			func(ctx context.Context, _ *repo.Products, o *repo.Orders) error {
				_, _, err := o.Create(ctx, repo.NewOrder{ProductID: product, Quantity: 1, IdempotencyKey: "outcome-queued"})
				return err
			},
			false, `SELECT count(*) FROM orders WHERE product_id = 77`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			direct, viaLink, _ := slowCancelPools(t, nil)
			products := repo.NewProducts(viaLink, newCache(t), dbtest.Logger(t))
			orders := repo.NewOrders(viaLink, nil)
			release := tt.hold(t, direct, viaLink)
			ctx, cancel := context.WithTimeout(testCtx(t), 300*time.Millisecond)
			err := tt.write(ctx, products, orders)
			cancel()
			release()
			switch {
			case err == nil:
				t.Fatal("the write succeeded within its deadline; the test's hold did not hold it")
			case tt.unknown && (!errors.Is(err, repo.ErrOutcomeUnknown) || errors.Is(err, repo.ErrUnavailable)):
				t.Fatalf("got %v, want ErrOutcomeUnknown (and not ErrUnavailable)", err)
			case !tt.unknown && (errors.Is(err, repo.ErrOutcomeUnknown) || !errors.Is(err, repo.ErrUnavailable)):
				// Not the 504 of a read past its deadline either: a client
				// must take that one as "may have been applied".
				t.Fatalf("got %v, want ErrUnavailable: the write never reached its COMMIT", err)
			}
			// What the server did with it, once it could finish: an unknown
			// outcome commits here (so "retry later" would have applied it
			// twice); a definite failure leaves nothing once its session
			// has ended (the late cancel, then the client's Terminate).
			if !tt.unknown {
				time.Sleep(cancelDelay + 500*time.Millisecond)
				if got := queryInt(t, direct, tt.applied); got != 0 {
					t.Fatalf("%s: %d, want 0", tt.applied, got)
				}
				return
			}
			for deadline := time.Now().Add(cancelDelay); queryInt(t, direct, tt.applied) != 1; time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%s: %d, want 1", tt.applied, queryInt(t, direct, tt.applied))
				}
			}
		})
	}
}

// holdPool takes every connection of pool until release is called.
func holdPool(t *testing.T, pool *db.Pool) (release func()) {
	t.Helper()
	n := int(pool.Stat().MaxConns())
	var wg sync.WaitGroup
	held, done := make(chan struct{}, n), make(chan struct{})
	for range n {
		wg.Go(func() {
			_ = pool.With(testCtx(t), func(db.Conn) error {
				held <- struct{}{}
				<-done
				return nil
			})
		})
	}
	for range n {
		<-held
	}
	return func() { close(done); wg.Wait() }
}

// cancelDelay is how long the link holds PostgreSQL's CancelRequest.
const cancelDelay = 3 * time.Second

// slowCancelPools opens two pools on one fresh database: direct, and
// through a link that holds every CancelRequest for cancelDelay. pgx
// cancels a statement its caller gave up on; here it runs to its end
// first, as it does when the cancel comes late or the answer is lost on
// the way back. The server's statement timeout is far above the callers'
// deadlines for the same reason. observe, when set, is the link's
// netproxy.Options.Observe.
func slowCancelPools(t *testing.T, observe func() func([]byte)) (direct, viaLink *db.Pool, link *netproxy.Proxy) {
	t.Helper()
	cfg := db.Config{MaxConns: 4, StatementTimeout: 10 * time.Second}
	cfg.URL = dbtest.NewDatabase(t, "repo")
	u, err := url.Parse(cfg.URL)
	if err != nil {
		t.Fatal(err)
	}
	if direct, err = db.Open(testCtx(t), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(direct.Close)
	if err := db.Migrate(testCtx(t), direct, migrations.FS, dbtest.Logger(t)); err != nil {
		t.Fatal(err)
	}
	link, err = netproxy.New(u.Host, netproxy.Options{Observe: observe, SlowOnly: func(b []byte) bool {
		// A CancelRequest: length 16, then the code 80877102.
		return len(b) >= 8 && binary.BigEndian.Uint32(b) == 16 && binary.BigEndian.Uint32(b[4:]) == 80877102
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)
	link.SetDelay(cancelDelay)
	u.Host = link.Addr()
	cfg.URL = u.String()
	viaLink, err = db.Open(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(viaLink.Close)
	return direct, viaLink, link
}

// holdTx runs lock in a transaction on a connection of pool's and keeps
// the transaction open until release (at the latest when the test ends).
func holdTx(t *testing.T, pool *db.Pool, lock string) (release func()) {
	t.Helper()
	return holdConn(t, pool, func(ctx context.Context, conn db.Conn) (func() error, error) {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return nil, err
		}
		if _, err := tx.Exec(ctx, lock); err != nil {
			return nil, errors.Join(err, tx.Rollback(ctx))
		}
		return func() error { return tx.Rollback(ctx) }, nil
	})
}

// holdConn takes one of pool's connections, runs take on it, and keeps the
// connection until release, which runs what take returned.
func holdConn(t *testing.T, pool *db.Pool, take func(context.Context, db.Conn) (func() error, error)) (release func()) {
	t.Helper()
	taken, done, held := make(chan error, 1), make(chan struct{}), make(chan error, 1)
	ctx := testCtx(t)
	go func() {
		held <- pool.With(ctx, func(conn db.Conn) error {
			undo, err := take(ctx, conn)
			taken <- err
			if err != nil {
				return err
			}
			<-done
			return undo()
		})
	}()
	if err := <-taken; err != nil {
		t.Fatalf("hold a connection: %v", err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			close(done)
			if err := <-held; err != nil && !errors.Is(err, pgx.ErrTxClosed) {
				t.Errorf("hold a connection: %v", err)
			}
		})
	}
	t.Cleanup(release)
	return release
}
