package config

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
)

// Guards judge what a setting means, not how it is spelt: 0.0.0.0/1 and
// 128.0.0.0/1 together trust every IPv4 address as surely as 0.0.0.0/0
// does, a one-letter admin token guards nothing, and an admin listener
// any network can reach must not be left to a Host header a client
// writes itself.

// minAdminToken is the shortest ADMIN_TOKEN accepted: 16 characters of
// `openssl rand -hex 8` are 64 bits, beyond guessing over a network.
const minAdminToken = 16

// checkGuards reports every setting whose meaning is unsafe.
func checkGuards(p *envParser, c Config) {
	allowAll := p.boolean("TRUSTED_PROXIES_ALLOW_ALL", false)
	if family := coversAll(c.TrustedProxies); family != "" && !allowAll {
		p.fail("TRUSTED_PROXIES", p.getenv("TRUSTED_PROXIES"), fmt.Sprintf(
			"these ranges together cover every %s address, which lets any client choose its IP with X-Forwarded-For; list your proxies, or set TRUSTED_PROXIES_ALLOW_ALL=true", family))
	}
	if c.AdminToken != "" && len(c.AdminToken) < minAdminToken {
		// A secret: the error names the rule, never the value.
		p.fail("ADMIN_TOKEN", "(hidden)", fmt.Sprintf(
			"must be at least %d characters (e.g. `openssl rand -hex 16`): a short token can be guessed", minAdminToken))
	}
	p.listenAddr("HTTP_ADDR", c.HTTPAddr)
	if c.MetricsAddr != "" {
		p.listenAddr("METRICS_ADDR", c.MetricsAddr)
	}
	if c.AdminAddr != "off" && !p.listenAddr("ADMIN_ADDR", c.AdminAddr) {
		return // malformed: said above, not "not loopback"
	}
	if c.AdminAddr != "off" && c.AdminToken == "" && !loopbackListen(c.AdminAddr) {
		p.fail("ADMIN_ADDR", c.AdminAddr,
			"is not a loopback address and ADMIN_TOKEN is empty: pprof and the console would be guarded only by a Host header any client can write; set ADMIN_TOKEN, or listen on 127.0.0.1")
	}
}

// coversAll names the address family ("IPv4" or "IPv6") whose every
// address the union of cidrs holds, or "" when neither is covered. The
// ranges are judged as gin's trust check (net.IPNet) reads them: an
// IPv4-mapped range (::ffff:0:0/96) holds IPv4 clients.
func coversAll(cidrs []string) string {
	var v4, v6 []netip.Prefix
	for _, s := range cidrs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, err := netip.ParseAddr(s)
			if err != nil {
				continue // reported by cidrs
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		p = p.Masked()
		switch a := p.Addr(); {
		case a.Is4():
			v4 = append(v4, p)
		case a.Is4In6() && p.Bits() >= 96:
			v4 = append(v4, netip.PrefixFrom(a.Unmap(), p.Bits()-96))
		default:
			v6 = append(v6, p)
		}
	}
	switch {
	case covers(v4, netip.IPv4Unspecified()):
		return "IPv4"
	case covers(v6, netip.IPv6Unspecified()):
		return "IPv6"
	}
	return ""
}

// covers reports whether the prefixes, of one family, leave no gap from
// first, that family's lowest address, to its highest.
func covers(prefixes []netip.Prefix, first netip.Addr) bool {
	slices.SortFunc(prefixes, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	highest := lastAddr(netip.PrefixFrom(first, 0))
	next := first // the lowest address not yet covered
	for _, p := range prefixes {
		if p.Addr().Compare(next) > 0 {
			return false // a gap before p
		}
		if end := lastAddr(p); end.Compare(next) >= 0 {
			if end == highest {
				return true
			}
			next = end.Next()
		}
	}
	return false
}

// lastAddr is the highest address of a masked prefix.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// listenAddr reports whether addr is a listen address (host:port, the
// host optional, the port a number up to 65535 or a service name), and
// fails name otherwise: the listener's own error, at start, named no
// variable ("listen garbage: missing port in address").
func (p *envParser) listenAddr(name, addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = net.LookupPort("tcp", port)
	}
	if err != nil || port == "" {
		p.fail(name, addr, `want host:port or :port (e.g. ":8080", "127.0.0.1:8081")`)
		return false
	}
	return true
}

// loopbackListen reports whether a listen address binds loopback only:
// localhost or a loopback IP with a port (":8081" binds every interface).
func loopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
