package middleware

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	limiter "github.com/ulule/limiter/v3"
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
	// LookupsPerClient and LookupBurst bound each client's (ClientKey)
	// share of those lookups, so one client's made-up keys cannot spend
	// another's; beyond it that client answers 429. 0 leaves only the
	// instance's budget.
	LookupsPerClient float64
	LookupBurst      int
	// Failures counts missing and refused keys per client (authfail.go);
	// nil counts none.
	Failures *limiter.Limiter
	Log      *slog.Logger
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
	lookups, identifyLookups *lookupBudget
	// warn samples the refusals a client can provoke at will.
	warn     *SampledLog
	mu       sync.Mutex
	verified map[[32]byte]time.Time // hash → believed until
}

// NewAuth builds the checker. With no static key and no store every write
// is refused: secure by default.
func NewAuth(cfg AuthConfig) *Auth {
	a := &Auth{cfg: cfg, verified: map[[32]byte]time.Time{}}
	for _, k := range cfg.Static {
		a.static = append(a.static, sha256.Sum256([]byte(k)))
	}
	a.lookups = newLookupBudget(cfg.LookupsPerSecond, cfg.LookupsPerClient, cfg.LookupBurst)
	a.identifyLookups = newLookupBudget(cfg.LookupsPerSecond, cfg.LookupsPerClient, cfg.LookupBurst)
	a.warn = NewSampledLog(cfg.Log, refusalLogsPerSecond)
	return a
}

var errUnverifiable = errors.New("api key cannot be verified now")

// notAKey answers an Authorization header that holds no Bearer key.
var notAKey = fmt.Sprintf("the Authorization header must be Bearer and an API key: at most %d visible ASCII characters", maxKeyLen)

// refusalLogsPerSecond bounds the WARN lines refused keys write.
const refusalLogsPerSecond = 5

// Require answers 401 (with WWW-Authenticate: Bearer, RFC 6750) unless the
// request carries a valid key, 429 when its client failed too often or
// spent its lookups, and 503 when the key store cannot be asked.
func (a *Auth) Require() gin.HandlerFunc {
	return func(c *gin.Context) {
		client := ClientKey(clientIP(c))
		if a.blocked(c, client) {
			return
		}
		key, presented, given, err := onlyBearer(c)
		switch {
		case err != nil:
			Refuse(c, http.StatusBadRequest, err.Error(), 0)
			return
		case !presented && given:
			a.refuse(c, client, `Bearer realm="stampede-guard"`, notAKey)
			return
		case !presented:
			a.refuse(c, client, `Bearer realm="stampede-guard"`, "this route needs an API key: send the header Authorization: Bearer YOUR_KEY")
			return
		}
		sum := sha256.Sum256([]byte(key))
		if err := a.check(c.Request.Context(), sum, a.lookups, client); err != nil {
			a.refuseKey(c, client, err)
			return
		}
		c.Set(ctxKeyID, keyID(sum))
		c.Next()
	}
}

// errKeyNotValid is check's verdict on a key that is neither believed nor
// in the store.
var errKeyNotValid = errors.New("the API key is not valid")

// check reports nil when sum is a valid key's hash, errKeyNotValid when it
// is not, and why it cannot be told now otherwise (the client's share of
// lookups spent, the instance's budget spent, the store failing).
func (a *Auth) check(ctx context.Context, sum [32]byte, lookups *lookupBudget, client string) error {
	ok, err := a.valid(ctx, sum, lookups, client)
	switch {
	case err != nil:
		return err
	case !ok:
		return errKeyNotValid
	}
	return nil
}

// refuseKey answers a presented key that check did not accept: 401 when it
// is not valid, 429 when its client spent its lookups, 503 when it cannot
// be checked now.
func (a *Auth) refuseKey(c *gin.Context, client string, err error) {
	var spent *clientLookupsError
	switch {
	case errors.Is(err, errKeyNotValid):
		a.refuse(c, client, `Bearer realm="stampede-guard", error="invalid_token"`, err.Error())
	case errors.As(err, &spent):
		a.warn.Warn("api key check refused", "err", err, "client", client)
		tooManyLookups(c, spent)
	default:
		a.warn.Warn("api key check failed", "err", err)
		Refuse(c, statusUnavailable, "the API key cannot be checked now, retry later", retryHint(err, time.Second))
	}
}

// Believed reports whether c carries a key this instance believes without
// asking the store: a static key, or one a lookup verified within
// CacheTTL. It never looks a key up and spends no budget.
func (a *Auth) Believed(c *gin.Context) bool {
	key, presented, _, _ := onlyBearer(c)
	if !presented {
		return false
	}
	return a.believed(sha256.Sum256([]byte(key)), time.Now())
}

// believed reports whether sum is a static key's hash (compared in
// constant time, every one of them, so timing says nothing about which or
// how close) or a key's verified before now + CacheTTL.
func (a *Auth) believed(sum [32]byte, now time.Time) bool {
	match := 0
	for i := range a.static {
		match |= subtle.ConstantTimeCompare(a.static[i][:], sum[:])
	}
	if match == 1 {
		return true
	}
	a.mu.Lock()
	until, hit := a.verified[sum]
	a.mu.Unlock()
	return hit && now.Before(until)
}

// onlyBearer is the key of the request's Authorization header (see
// bearer), whether one was given (an empty one was not: a client's unset
// template variable sends no credentials), and OneHeader's error when two
// were: then no key is presented, since which of them is meant cannot be
// told.
func onlyBearer(c *gin.Context) (key string, presented, given bool, err error) {
	h, given, err := OneHeader(c.Request.Header, "Authorization")
	given = given && strings.Trim(h, " \t") != ""
	if given {
		key, presented = bearer(h)
	}
	return key, presented, given, err
}

// bearer extracts the token of an "Authorization: Bearer <token>" header.
// The scheme is case-insensitive (RFC 9110 §11.1); the token must be
// printable ASCII and of a sane length. Only spaces separate it from the
// scheme (RFC 9110 §11.4: 1*SP); a tab, CR or other control byte there is a
// malformed header, refused rather than trimmed away.
func bearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.Trim(token, " ")
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

// valid reports whether sum is a key's hash: a believed one (static, or
// recently verified), or a key in the store (a lookup the client's budget
// and the instance's pay for).
func (a *Auth) valid(ctx context.Context, sum [32]byte, lookups *lookupBudget, client string) (bool, error) {
	now := time.Now()
	if a.believed(sum, now) {
		return true, nil
	}
	if a.cfg.Store == nil {
		return false, nil
	}
	if err := lookups.allow(client); err != nil {
		return false, err
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
