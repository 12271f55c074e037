package admin

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
)

// capSeconds lowers pprof's ?seconds= to maxProfile.
func (a *Server) capSeconds(next http.Handler) http.Handler {
	limit := a.maxProfile
	if limit <= 0 {
		limit = maxProfileDefault
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if s, err := strconv.ParseFloat(q.Get("seconds"), 64); err == nil && s > limit.Seconds() {
			q.Set("seconds", strconv.FormatFloat(limit.Seconds(), 'f', -1, 64))
			r = r.Clone(r.Context())
			r.URL.RawQuery = q.Encode()
		}
		next.ServeHTTP(w, r)
	})
}

// guard protects the admin side: pprof and lock names are not for clients.
// With ADMIN_TOKEN, every request must carry it (Authorization: Bearer, or
// Basic with the token as password, which a browser prompts for). Without
// it, only a loopback Host is served: that stops a browser tricked by DNS
// rebinding and anyone who reaches a non-loopback ADMIN_ADDR by its name or
// address. (A client that forges Host on a reachable port is stopped only
// by the token, which is why a non-loopback ADMIN_ADDR without one refuses
// to start.)
func (a *Server) guard(next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(a.Token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.Token == "" {
			if !loopbackHost(r.Host) {
				http.Error(w, "admin: use a loopback address (127.0.0.1, localhost) or set ADMIN_TOKEN", http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		got, ok := adminCredential(r)
		sum := sha256.Sum256([]byte(got))
		if !ok || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="stampede-guard admin", charset="UTF-8"`)
			http.Error(w, "admin: ADMIN_TOKEN required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// adminCredential is the token of a Bearer header or the password of a
// Basic one.
func adminCredential(r *http.Request) (string, bool) {
	if _, pass, ok := r.BasicAuth(); ok {
		return pass, true
	}
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	return token, ok && strings.EqualFold(scheme, "Bearer")
}

// loopbackHost reports whether a Host header names this machine's
// loopback: localhost or a loopback IP, with or without a port.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
