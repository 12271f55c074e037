package middleware

import (
	"crypto/sha256"
	"net/http"

	"github.com/gin-gonic/gin"
)

// Open routes take an API key without needing one: a valid key gets its
// own rate-limit budget (Identify), and on checkout it scopes the order's
// Idempotency-Key and budget (Optional). There a key that is sent but not
// accepted must not be read as "no key": an order placed anonymously while
// the key store was slow would not be found by the same request retried
// with the key believed, and the retry would place a second order.

// ctxKeyVerdict holds why Identify did not accept a presented key, so that
// Optional answers it without looking the same key up twice.
const ctxKeyVerdict = "api_key_verdict"

// Identify marks a request that carries a valid key (KeyID), so limits
// can count per key, and lets every other request through anonymously: a
// missing, unknown or unverifiable key is not an error on routes open to
// anyone. It never answers by itself, except 400 for two Authorization
// headers.
func (a *Auth) Identify() gin.HandlerFunc {
	return func(c *gin.Context) {
		if KeyID(c) != "" {
			c.Next() // already authenticated (Require)
			return
		}
		key, presented, _, err := onlyBearer(c)
		if err != nil {
			Refuse(c, http.StatusBadRequest, err.Error(), 0)
			return
		}
		if presented {
			_ = a.identify(c, key, ClientKey(clientIP(c))) // the verdict is kept for Optional
		}
		c.Next()
	}
}

// Optional lets a request without an Authorization header through
// anonymously and holds one that sends a key to it, as Require does: 401
// when the key is not valid (or the header holds none), 429 when the client
// failed too often or spent its lookups, 503 when the key cannot be checked
// now. Behind Identify it reuses Identify's verdict.
func (a *Auth) Optional() gin.HandlerFunc {
	return func(c *gin.Context) {
		if KeyID(c) != "" {
			c.Next()
			return
		}
		key, presented, given, err := onlyBearer(c)
		client := ClientKey(clientIP(c))
		switch {
		case err != nil:
			Refuse(c, http.StatusBadRequest, err.Error(), 0)
			return
		case !given:
			c.Next()
			return
		case a.blocked(c, client):
			return
		case !presented:
			a.refuse(c, client, `Bearer realm="stampede-guard"`, notAKey)
			return
		}
		if err := a.identify(c, key, client); err != nil {
			a.refuseKey(c, client, err)
			return
		}
		c.Next()
	}
}

// identify checks key on the open routes' lookup budget, once per request:
// nil (and KeyID set) when it is valid, else why not, kept in c so that a
// later Optional answers it without looking the same key up again.
func (a *Auth) identify(c *gin.Context, key, client string) error {
	if v, seen := c.Get(ctxKeyVerdict); seen {
		err, _ := v.(error)
		return err
	}
	sum := sha256.Sum256([]byte(key))
	err := a.check(c.Request.Context(), sum, a.identifyLookups, client)
	if err != nil {
		c.Set(ctxKeyVerdict, err)
	} else {
		c.Set(ctxKeyID, keyID(sum))
	}
	return err
}
