// Command api is the stampede-guard product API: a Gin service that keeps
// PostgreSQL alive when a hot cache key expires, when Redis restarts, when a
// deploy empties the cache, and when traffic grows past what the database
// can take. main only starts the app; the composition root is internal/app,
// and every protection lives in a package of its own.
package main

import (
	"context"
	"os"

	"github.com/stampede-guard/api/internal/app"
)

func main() {
	os.Exit(app.Main(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}
