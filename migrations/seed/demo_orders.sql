-- Demo data, applied by `api seed` (not a migration: a real deployment has
-- its own orders). 50 000 historical orders over 90 days, skewed towards low
-- ids (a cubic curve), so the top-products report is a real aggregate with a
-- clear top. Adds nothing once orders exist, so running it again is safe.
INSERT INTO orders (product_id, quantity, total_cents, created_at)
SELECT p.id, q.quantity, q.quantity * p.price_cents, now() - (g % 90) * interval '1 day' - (g % 86400) * interval '1 second'
FROM generate_series(1, 50000) AS g
CROSS JOIN LATERAL (
    SELECT least(1000, 1 + floor(1000 * power(((g::bigint * 7919) % 10007)::float8 / 10007, 3)))::bigint AS product_id,
           1 + (g % 5) AS quantity
) AS q
JOIN products AS p ON p.id = q.product_id
WHERE NOT EXISTS (SELECT 1 FROM orders);
