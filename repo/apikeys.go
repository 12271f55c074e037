package repo

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/stampede-guard/api/db"
)

// ScopeWrite lets a key create and update products.
const ScopeWrite = "write"

// Scopes are the scopes a key may be created with (the table's CHECK).
var Scopes = []string{ScopeWrite}

// apiKeyPrefix marks the app's keys, so a secret scanner (or a human) can
// tell one in a log or a commit.
const apiKeyPrefix = "sgk_"

// APIKeys stores API keys as SHA-256 hashes: the key itself is shown once,
// when it is created, and never stored.
type APIKeys struct {
	pool *db.Pool
}

// NewAPIKeys wires the API key store on the main pool.
func NewAPIKeys(pool *db.Pool) *APIKeys { return &APIKeys{pool: pool} }

// Create makes a new random key with scope and returns it; only its hash
// is stored.
func (k *APIKeys) Create(ctx context.Context, scope string) (string, error) {
	if !slices.Contains(Scopes, scope) {
		return "", fmt.Errorf("scope %q: %w", scope, ErrInvalid)
	}
	secret := make([]byte, 32) // 256 bits: guessing is hopeless
	if _, err := rand.Read(secret); err != nil {
		return "", fmt.Errorf("api key: random: %w", err)
	}
	key := apiKeyPrefix + base64.RawURLEncoding.EncodeToString(secret)
	sum := sha256.Sum256([]byte(key))
	err := k.pool.With(ctx, func(conn db.Conn) error {
		_, err := conn.Exec(ctx, `INSERT INTO api_keys (key_sha256, scope) VALUES ($1, $2)`, sum[:], scope)
		return err
	})
	if err != nil {
		return "", unavailable(fmt.Errorf("create api key: %w", err), k.pool)
	}
	return key, nil
}

// HasHash reports whether a key whose SHA-256 is sum exists with scope. The
// lookup is by the hash itself (a unique index), so its timing says nothing
// about how close a wrong key came.
func (k *APIKeys) HasHash(ctx context.Context, sum [32]byte, scope string) (bool, error) {
	var found bool
	err := k.pool.With(ctx, func(conn db.Conn) error {
		return conn.QueryRow(ctx, `SELECT scope = $2 FROM api_keys WHERE key_sha256 = $1`, sum[:], scope).Scan(&found)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, unavailable(fmt.Errorf("look up api key: %w", err), k.pool)
	}
	return found, nil
}
