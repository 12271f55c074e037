-- +goose Up
-- Orders belong to whoever placed them (docs/security.md). POST /orders
-- hands out a capability token; only its SHA-256 is kept, as for API keys:
-- the tokens are 256-bit random (or derived from a client's random
-- Idempotency-Key), so a plain hash is enough. Orders placed before this
-- migration have no token and can no longer be read through the API.
ALTER TABLE orders
    ADD COLUMN token_sha256 bytea CHECK (length(token_sha256) = 32);

-- An Idempotency-Key is scoped to its caller: the id of the API key that
-- placed the order (a hash prefix, never the key), '' for anonymous callers.
-- Another caller's identical key is another order, not theirs.
ALTER TABLE orders
    ADD COLUMN idempotency_scope text NOT NULL DEFAULT '';
ALTER TABLE orders
    DROP CONSTRAINT orders_idempotency_key_key;
ALTER TABLE orders
    ADD CONSTRAINT orders_idempotency_scope_key UNIQUE (idempotency_scope, idempotency_key);

-- +goose Down
ALTER TABLE orders
    DROP CONSTRAINT orders_idempotency_scope_key;
-- Fails if two callers used one key since the Up: deleting orders to
-- make it pass is not a migration's call.
ALTER TABLE orders
    ADD CONSTRAINT orders_idempotency_key_key UNIQUE (idempotency_key);
ALTER TABLE orders
    DROP COLUMN idempotency_scope;
ALTER TABLE orders
    DROP COLUMN token_sha256;
