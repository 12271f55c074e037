package cache

import "time"

// WithFirstPoll returns cfg with a waiter's first poll interval set to d
// (and the cap at least d), for tests that must tell a fill signal's
// wake-up from a poll's.
func WithFirstPoll(cfg Config, d time.Duration) Config {
	cfg.pollFirst = d
	return cfg
}
