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

-- 50 000 historical orders over 90 days, skewed towards low ids (a cubic
-- curve), so the top-products report is a real aggregate with a clear top.
INSERT INTO orders (product_id, quantity, total_cents, created_at)
SELECT p.id, q.quantity, q.quantity * p.price_cents, now() - (g % 90) * interval '1 day' - (g % 86400) * interval '1 second'
FROM generate_series(1, 50000) AS g
CROSS JOIN LATERAL (
    SELECT least(1000, 1 + floor(1000 * power(((g::bigint * 7919) % 10007)::float8 / 10007, 3)))::bigint AS product_id,
           1 + (g % 5) AS quantity
) AS q
JOIN products AS p ON p.id = q.product_id;

-- +goose Down
DROP TABLE orders;
