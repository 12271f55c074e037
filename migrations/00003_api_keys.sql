-- +goose Up
-- API keys that may write (POST /products, PUT /products/:id). Only the
-- SHA-256 of a key is kept: a leaked table or backup gives no usable key.
-- The keys are 256-bit random tokens, so a plain (unsalted, fast) hash is
-- enough; salts and slow hashes are for low-entropy passwords.
CREATE TABLE api_keys (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key_sha256 bytea       NOT NULL UNIQUE CHECK (length(key_sha256) = 32),
    scope      text        NOT NULL CHECK (scope IN ('write')),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE api_keys;
