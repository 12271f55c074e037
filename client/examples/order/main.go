// Command order is an example caller of the API through client/: it reads
// a product, places an order for it, and reads the order back. Run it
// against a running service:
//
//	go run ./client/examples/order -base http://127.0.0.1:8080 -product 42 -quantity 1
//
// (from the repository's root). Reading a product and placing an order
// need no key; -api-key or $API_KEY, a key with write scope, is sent when
// given, as a caller that also writes products would. The client retries what a
// retry can fix, waits out any Retry-After, and reuses one Idempotency-Key
// for the order, so running this during an overload places one order or
// reports why it could not; it never places two. This program adds no
// retry loop of its own: retries belong to one layer only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/stampede-guard/api/client"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "order:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("order", flag.ContinueOnError)
	base := fs.String("base", "http://127.0.0.1:8080", "base URL of the API")
	product := fs.Int64("product", 1, "product id")
	quantity := fs.Int("quantity", 1, "quantity to order")
	apiKey := fs.String("api-key", os.Getenv("API_KEY"), "bearer key with write scope")
	timeout := fs.Duration("timeout", 15*time.Second, "deadline of the whole run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *quantity < 1 || *quantity > math.MaxInt32 {
		return fmt.Errorf("-quantity %d: want 1 to %d", *quantity, math.MaxInt32)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	api, err := client.New(*base, client.WithAPIKey(*apiKey))
	if err != nil {
		return err
	}
	p, cache, err := api.GetProduct(ctx, *product)
	if err != nil {
		return fmt.Errorf("read product %d: %w", *product, err)
	}
	fmt.Fprintf(out, "product %d %q at %d cents (cache %s)\n", p.ID, p.Name, p.PriceCents, cache)

	res, err := api.CreateOrder(ctx, client.NewOrder{ProductID: p.ID, Quantity: int32(*quantity)})
	switch {
	case errors.Is(err, client.ErrOutOfStock):
		return fmt.Errorf("product %d: not enough stock for %d", p.ID, *quantity)
	case errors.Is(err, client.ErrRateLimited), errors.Is(err, client.ErrUnavailable):
		// The client already retried within its budget; say when to try
		// again rather than hammering the service from here.
		return fmt.Errorf("service busy, try again in %s: %w", client.RetryAfter(err), err)
	case err != nil:
		return fmt.Errorf("place order: %w", err)
	}
	fmt.Fprintf(out, "order %d at %s: %d × product %d = %d cents (key %s, replayed %v)\n",
		res.ID, res.Location, res.Quantity, res.ProductID, res.TotalCents, res.IdempotencyKey, res.Replayed)

	o, err := api.GetOrder(ctx, res.ID, res.Token)
	if err != nil {
		return fmt.Errorf("read order %d back: %w", res.ID, err)
	}
	fmt.Fprintf(out, "read back order %d created at %s\n", o.ID, o.CreatedAt.Format(time.RFC3339))
	return nil
}
