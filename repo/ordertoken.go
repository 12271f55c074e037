package repo

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
)

// An order's token is the proof that its holder placed it: GET
// /orders/:id answers only with it. Only its SHA-256 is stored (the token is
// 256 bits of randomness or of a PRF, so a plain hash is enough), so a
// leaked table or backup hands out no working token.
//
// A keyed order's token is derived from its Idempotency-Key and caller
// scope rather than drawn at random: a replay must hand the client the same
// token, and the database keeps nothing it could be read back from. The
// derivation gives a replay no more than the key itself proves: whoever
// holds the key could replay the request and read the answer anyway. That
// is why clients must make keys unguessable (docs/api.md: 128 random bits,
// e.g. a UUIDv4).

// tokenBytes is the size of a random token: 256 bits.
const tokenBytes = 32

// tokenLabel separates this use of the Idempotency-Key from any other.
const tokenLabel = "stampede-guard order token v1"

// newOrderToken returns the token of an order: derived from the key when
// there is one, random otherwise.
func newOrderToken(in NewOrder) string {
	if in.IdempotencyKey != "" {
		return derivedOrderToken(in.Scope, in.IdempotencyKey)
	}
	b := make([]byte, tokenBytes)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// derivedOrderToken is HMAC-SHA256 keyed by the Idempotency-Key over the
// caller's scope: one token per (caller, key), which are one order.
func derivedOrderToken(scope, key string) string {
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte(tokenLabel))
	mac.Write([]byte{0})
	mac.Write([]byte(scope))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// wellFormed says whether token could be one this package hands out: 43
// characters of unpadded base64url, what both kinds encode to. Anything
// else matches no order, so Get answers it without a query: a made-up
// token then costs the database nothing, as a made-up product id does.
func wellFormed(token string) bool {
	if len(token) != base64.RawURLEncoding.EncodedLen(tokenBytes) {
		return false
	}
	for i := range len(token) {
		switch c := token[i]; {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

// tokenHash is what the orders table keeps of a token.
func tokenHash(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// tokenMatches compares a presented token with a stored hash in constant
// time; an order without a stored hash (placed before tokens existed)
// matches nothing.
func tokenMatches(token string, stored []byte) bool {
	if len(stored) != sha256.Size {
		return false
	}
	return subtle.ConstantTimeCompare(tokenHash(token), stored) == 1
}
