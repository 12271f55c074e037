package config

import (
	"net"
	"regexp"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// hideUserinfo replaces everything between "://" and the URL's last "@"
// (its user and password, whatever characters they hold) with "xxxxx",
// and the value of a password query parameter too.
func hideUserinfo(raw string) string {
	if i := strings.Index(raw, "://"); i >= 0 {
		if at := strings.LastIndex(raw[i+3:], "@"); at >= 0 {
			raw = raw[:i+3] + "xxxxx" + raw[i+3+at:]
		}
	}
	return queryPassword.ReplaceAllString(raw, "${1}xxxxx")
}

var queryPassword = regexp.MustCompile(`(?i)([?&]password=)[^&#]*`)

// urlError is what a refused connection URL is reported as, with nothing
// of its user or password: the URL with them hidden, and why it was
// refused, found by parsing that URL again, so the parser's error (which
// repeats the URL, or pieces of it: a password with "/" in it was taken
// for a port) cannot hold them either. When the hidden URL parses, the
// user or password was the trouble.
func urlError(raw string, err error, parse func(string) error) (shown, why string) {
	shown = hideUserinfo(raw)
	if shown == raw {
		return raw, err.Error()
	}
	if err := parse(shown); err != nil {
		return shown, err.Error()
	}
	return shown, `its user or password is not valid in a URL: percent-encode "/", "?", "#", "@", ":" and "%" in them`
}

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
