package repo

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stampede-guard/api/db"
)

// What the cache's integrity checks need from the domain: the key that
// signs entries when none is configured, and the version of a cached
// product.

// signingKeySize is the length of a generated cache signing key: HMAC-
// SHA256's block-size floor, as CACHE_SIGNING_KEY's minimum.
const signingKeySize = 32

// CacheSigningKey returns the fleet's cache signing key, kept in
// PostgreSQL (migrations/00005_cache_signing_key.sql), making it on the
// first call: every instance proposes a random key, the first insert wins
// (ON CONFLICT DO NOTHING) and every instance then reads the one stored.
// The two statements run apart on purpose: the SELECT takes a snapshot of
// its own, so it sees a row that a concurrent start committed after this
// INSERT began.
func CacheSigningKey(ctx context.Context, pool *db.Pool) ([]byte, error) {
	proposed := make([]byte, signingKeySize)
	if _, err := rand.Read(proposed); err != nil {
		return nil, fmt.Errorf("cache signing key: %w", err)
	}
	var key []byte
	err := retry(ctx, func() error {
		return pool.With(ctx, func(conn db.Conn) error {
			if _, err := conn.Exec(ctx,
				`INSERT INTO cache_signing_key (id, key) VALUES (1, $1) ON CONFLICT (id) DO NOTHING`, proposed); err != nil {
				return err
			}
			return conn.QueryRow(ctx, `SELECT key FROM cache_signing_key WHERE id = 1`).Scan(&key)
		})
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, errors.New("cache signing key: the row was deleted while starting; start again")
	case err != nil:
		return nil, fmt.Errorf("cache signing key (run the migrations, or set CACHE_SIGNING_KEY): %w", err)
	}
	return key, nil
}

// EntryVersion is the version of a cached product payload, for the cache's
// replay check (cache.Config.Version): its updated_at in microseconds,
// which every update moves strictly forward (Update). A payload that does
// not decode is version 0; verify refuses it anyway.
func EntryVersion(value []byte) uint64 {
	var v struct {
		UpdatedAt time.Time `json:"updated_at"`
	}
	if json.Unmarshal(value, &v) != nil || v.UpdatedAt.UnixMicro() <= 0 {
		return 0
	}
	return uint64(v.UpdatedAt.UnixMicro()) // #nosec G115 -- positive, checked above
}
