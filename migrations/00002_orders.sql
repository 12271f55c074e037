-- +goose Up
CREATE TABLE orders (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    product_id      bigint      NOT NULL REFERENCES products (id),
    quantity        integer     NOT NULL CHECK (quantity > 0),
    total_cents     bigint      NOT NULL CHECK (total_cents >= 0),
    -- A client's Idempotency-Key. The unique constraint, not Redis, is what
    -- guarantees that one key creates at most one order.
    idempotency_key text        CONSTRAINT orders_idempotency_key_key UNIQUE,
    -- Hash of the request body that first used the key, so the same key with
    -- a different body is refused instead of silently answered.
    request_hash    text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    CHECK ((idempotency_key IS NULL) = (request_hash IS NULL))
);

CREATE INDEX orders_created_at_product_idx ON orders (created_at, product_id);

-- +goose Down
DROP TABLE orders;
