-- +goose Up
-- The key that signs cache entries when CACHE_SIGNING_KEY is not set: made
-- at the first start (32 random bytes, INSERT ... ON CONFLICT DO NOTHING,
-- so every instance sharing the database ends up with the same one) and
-- kept here, not in Redis: whoever can write to Redis must not be able to
-- read it. Deleting the row rotates it at the next start (docs/operations.md).
CREATE TABLE cache_signing_key (
    id         smallint    PRIMARY KEY CHECK (id = 1),
    key        bytea       NOT NULL CHECK (length(key) >= 32),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE cache_signing_key;
