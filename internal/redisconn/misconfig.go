package redisconn

import (
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// misconfigured are the starts of the replies with which a running Redis
// refuses the settings themselves: a wrong password or user (WRONGPASS),
// none given where one is needed (NOAUTH), a user without the rights
// (NOPERM), a password sent to a server that has none, a logical
// database the server does not have, or REDIS_CLUSTER_ADDRS naming a
// server that is not in a cluster.
var misconfigured = []string{
	"WRONGPASS", "NOAUTH", "NOPERM",
	"ERR AUTH", "ERR DB index is out of range", "ERR invalid DB index",
	"ERR This instance has cluster support disabled",
}

// IsMisconfigured reports whether err is Redis refusing REDIS_URL's
// credentials or database, or REDIS_CLUSTER_ADDRS: an outage for a running service (a password
// rotated under it), but at start a mistake that waiting cannot fix, where
// an unreachable Redis is one the service rides out.
func IsMisconfigured(err error) bool {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return false
	}
	msg := rerr.Error()
	for _, p := range misconfigured {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
