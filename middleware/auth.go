package middleware

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/time/rate"
)

// KeyStore finds keys by the SHA-256 of the key (repo.APIKeys).
type KeyStore interface {
	HasHash(ctx context.Context, sum [32]byte, scope string) (bool, error)
}

// AuthConfig configures the bearer-key check of write routes.
type AuthConfig struct {
	// Static are keys from the environment (API_KEYS), for bootstrap and
	// tests. Only their hashes are kept in memory.
	Static []string
	// Store holds the keys made with `api keys create`; nil means none.
	Store KeyStore
	// Scope a key must have.
	Scope string
	// CacheTTL is how long a key the store verified is believed without
	// asking again (so a hot client costs no query per request), and so
	// also how long a deleted key keeps working on an instance.
	CacheTTL time.Duration
	// LookupsPerSecond bounds store lookups for keys not in the cache: a
	// flood of made-up keys costs at most this many queries per second per
	// instance; beyond it an unknown key answers 503 until a token frees.
	LookupsPerSecond float64
	Log              *slog.Logger
}

// maxKeyLen bounds a presented key: ours are 47 characters.
const maxKeyLen = 256

// verifiedCacheSize bounds the cache of verified keys; only real keys get
// in, so an attacker cannot fill it, but a bound costs nothing.
const verifiedCacheSize = 4096

// ctxKeyID is the gin context key under which an authenticated request's
// key identity (a short hash prefix, never the key) is stored.
const ctxKeyID = "api_key_id"

// KeyID is the identity of the API key that authenticated c ("" if none):
// a hex prefix of its hash, safe to log and to count limits by.
func KeyID(c *gin.Context) string { return c.GetString(ctxKeyID) }

// Auth checks bearer keys. It is safe for concurrent use.
type Auth struct {
	cfg    AuthConfig
	static [][32]byte
	// Store lookups of keys not yet believed, one budget for the routes
	// that require a key and one for those that only identify it: made-up
	// keys sent to open routes cannot starve writes of their lookups.
	lookups, identifyLookups *rate.Limiter
	mu                       sync.Mutex
	verified                 map[[32]byte]time.Time // hash → believed until
}

// NewAuth builds the checker. With no static key and no store every write
// is refused: secure by default.
func NewAuth(cfg AuthConfig) *Auth {
	a := &Auth{cfg: cfg, verified: map[[32]byte]time.Time{}}
	for _, k := range cfg.Static {
		a.static = append(a.static, sha256.Sum256([]byte(k)))
	}
	limit, burst := rate.Limit(max(cfg.LookupsPerSecond, 1)), max(int(cfg.LookupsPerSecond), 1)
	a.lookups, a.identifyLookups = rate.NewLimiter(limit, burst), rate.NewLimiter(limit, burst)
	return a
}

var errUnverifiable = errors.New("api key cannot be verified now")

// Require answers 401 (with WWW-Authenticate: Bearer, RFC 6750) unless the
// request carries a valid key, and 503 when the key store cannot be asked.
func (a *Auth) Require() gin.HandlerFunc {
	return func(c *gin.Context) {
		key, presented := bearer(c.GetHeader("Authorization"))
		if !presented {
			c.Header("WWW-Authenticate", `Bearer realm="stampede-guard"`)
			Refuse(c, http.StatusUnauthorized, "this route needs an API key: Authorization: Bearer <key>", 0)
			return
		}
		sum := sha256.Sum256([]byte(key))
		ok, err := a.valid(c.Request.Context(), sum, a.lookups)
		switch {
		case err != nil:
			a.cfg.Log.Warn("api key check failed", "err", err)
			Refuse(c, statusUnavailable, "the API key cannot be checked now, retry later", retryHint(err, time.Second))
			return
		case !ok:
			c.Header("WWW-Authenticate", `Bearer realm="stampede-guard", error="invalid_token"`)
			Refuse(c, http.StatusUnauthorized, "the API key is not valid", 0)
			return
		}
		c.Set(ctxKeyID, keyID(sum))
		c.Next()
	}
}

// Identify marks a request that carries a valid key (KeyID), so limits
// can count per key, and lets every other request through anonymously: a
// missing, unknown or unverifiable key is not an error on routes open to
// anyone. It never answers by itself.
func (a *Auth) Identify() gin.HandlerFunc {
	return func(c *gin.Context) {
		if KeyID(c) != "" {
			c.Next() // already authenticated (Require)
			return
		}
		if key, presented := bearer(c.GetHeader("Authorization")); presented {
			sum := sha256.Sum256([]byte(key))
			if ok, err := a.valid(c.Request.Context(), sum, a.identifyLookups); ok && err == nil {
				c.Set(ctxKeyID, keyID(sum))
			}
		}
		c.Next()
	}
}

// bearer extracts the token of an "Authorization: Bearer <token>" header.
// The scheme is case-insensitive (RFC 9110 §11.1); the token must be
// printable ASCII and of a sane length.
func bearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	if token == "" || len(token) > maxKeyLen {
		return "", false
	}
	for i := 0; i < len(token); i++ {
		if token[i] < 0x21 || token[i] > 0x7e {
			return "", false
		}
	}
	return token, true
}

// valid reports whether sum is a key's hash: a static key (compared in
// constant time, every one of them, so timing says nothing about which or
// how close), a recently verified key, or a key in the store.
func (a *Auth) valid(ctx context.Context, sum [32]byte, lookups *rate.Limiter) (bool, error) {
	match := 0
	for i := range a.static {
		match |= subtle.ConstantTimeCompare(a.static[i][:], sum[:])
	}
	if match == 1 {
		return true, nil
	}
	if a.cfg.Store == nil {
		return false, nil
	}
	now := time.Now()
	a.mu.Lock()
	until, hit := a.verified[sum]
	a.mu.Unlock()
	if hit && now.Before(until) {
		return true, nil
	}
	if !lookups.Allow() {
		return false, errUnverifiable
	}
	ok, err := a.cfg.Store.HasHash(ctx, sum, a.cfg.Scope)
	if err != nil || !ok {
		return false, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.verified) >= verifiedCacheSize {
		for h, t := range a.verified {
			if !now.Before(t) || len(a.verified) >= verifiedCacheSize {
				delete(a.verified, h)
			}
		}
	}
	a.verified[sum] = now.Add(a.cfg.CacheTTL)
	return true, nil
}

func keyID(sum [32]byte) string {
	const hexdigits = "0123456789abcdef"
	out := make([]byte, 16)
	for i := range 8 {
		out[2*i], out[2*i+1] = hexdigits[sum[i]>>4], hexdigits[sum[i]&15]
	}
	return string(out)
}
