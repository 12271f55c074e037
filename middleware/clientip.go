package middleware

import (
	"strings"

	"github.com/gin-gonic/gin"
)

// forwardedFor is the one header the engine reads a client address from
// (main sets gin's RemoteIPHeaders to it alone), as net/http spells it.
const forwardedFor = "X-Forwarded-For"

// clientIP is gin's ClientIP — X-Forwarded-For believed only from
// TRUSTED_PROXIES — without its cost when the request has no such header:
// ClientIP then answers the peer's address, parsed and formatted again (an
// allocation per request), which RemoteIP reads as the kernel gave it.
func clientIP(c *gin.Context) string {
	if _, ok := c.Request.Header[forwardedFor]; ok {
		return c.ClientIP()
	}
	ip := c.RemoteIP()
	if strings.Contains(ip, ".") && strings.Contains(ip, ":") {
		return c.ClientIP() // an IPv4-mapped IPv6 form, which ClientIP shortens
	}
	return ip
}
