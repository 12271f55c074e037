// Package config reads every environment variable the app knows: each is
// read through an injected getenv, defaulted, derived from the ones the
// user did set (the time budget in budget.go, the TTL chain in ttls.go), and
// checked, so a mistake stops the start with one line naming the variable
// instead of surfacing as an outage later. It protects against
// configurations that break the protections themselves: a statement timeout
// longer than the lock TTL, an L1 that hides refreshes, a trusted-proxy
// range that believes every client, a signing key too short to sign.
//
// The infrastructure packages (db, cache, redisconn, breaker) each take a
// small Config of their own and know no variable names; internal/app turns
// this package's Config into theirs.
package config
