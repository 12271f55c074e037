package config

import (
	"net"
	"regexp"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// urlPassword is the password of a URL's userinfo: "://user:PASSWORD@".
var urlPassword = regexp.MustCompile(`(://[^:/@\s"]*:)[^@/\s"]*@`)

// redactURL hides every URL password in s (a URL, or an error that
// repeats one), as pgx does for DATABASE_URL: a start refused for a typo
// must not print the Redis password into the log.
func redactURL(s string) string { return urlPassword.ReplaceAllString(s, "${1}xxxxx@") }

// checkRedisOptions refuses what go-redis accepts from REDIS_URL and only
// fails later, or quietly does something else: a negative database (its
// keys went to database 0 while its invalidation channel named -1, so no
// other instance's invalidation reached its L1) and a port out of range
// (an outage for as long as it runs, not a mistake at start).
func checkRedisOptions(opt *redis.Options) string {
	if opt.DB < 0 {
		return "the database (the path's number) must be 0 or more"
	}
	if _, port, err := net.SplitHostPort(opt.Addr); err == nil {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "the port must be 1 to 65535"
		}
	}
	return ""
}
