package cache

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"time"
)

// Entry is what one Redis value holds: the payload and the facts the
// stampede protections need to decide, without another round trip, whether
// it is fresh, stale, or worth recomputing early.
type Entry struct {
	Value []byte // nil when Absent
	// Absent marks a cached "does not exist" (negative caching), so a
	// request for a missing id is a hit, not a database query.
	Absent bool
	// Static marks a never-expiring entry (Config.Static): fresh until its
	// safety TTL, kept by writes and the repair job, never reloaded by a
	// read.
	Static bool
	// SoftExpiry is when the value stops being fresh (SWR) or, for XFetch,
	// its logical expiry. Redis's own TTL on the key is the hard expiry.
	SoftExpiry time.Time
	// Delta is how long the load that produced the value took (XFetch).
	Delta time.Duration
	// HardExpiry is when Redis drops the entry (its TTL when written). It
	// is part of the envelope, so an entry Redis keeps longer — PERSIST, a
	// key planted without a TTL — is still refused after it (bounds.go).
	HardExpiry time.Time
	// Version orders the values of one key (Config.Version); an entry
	// older than a version this instance has seen for its key is refused
	// as a replay (floor.go). Zero for absent entries.
	Version uint64
}

// newEntry wraps a loaded value of key with its freshness facts and returns
// its Redis expiry. The expiry is jittered (TTLJitter) so keys written
// together (a warm-up, a burst of misses) do not all expire together. Where
// the entry is fresh until Redis drops it (absent entries, modes without
// SWR) its freshness ends at the jittered expiry too, so XFetch aims at the
// real one.
func (c *Cache) newEntry(key string, value []byte, absent bool, delta time.Duration) (Entry, time.Duration) {
	if !absent && c.static[key] {
		// Fresh until the safety TTL, which writes and the repair job keep
		// pushing back: no read ever finds it stale or missing.
		until := c.now().Add(c.cfg.StaticTTL)
		return Entry{Value: value, Static: true, SoftExpiry: until, Delta: delta, HardExpiry: until, Version: c.version(value)}, c.cfg.StaticTTL
	}
	soft, hard := c.lifetime(absent), c.cfg.TTL
	if absent {
		hard = soft
	}
	if jittered := c.jitter(hard); soft >= hard {
		soft, hard = jittered, jittered
	} else {
		hard = max(jittered, soft+(hard-soft)/2) // keep a stale window
	}
	now := c.now()
	e := Entry{Value: value, Absent: absent, SoftExpiry: now.Add(soft), Delta: delta, HardExpiry: now.Add(hard)}
	if absent {
		e.Value = nil // the envelope of an absent entry has no payload
	} else {
		e.Version = c.version(value)
	}
	return e, hard
}

// version is Config.Version of a loaded value, or 0 without one.
func (c *Cache) version(value []byte) uint64 {
	if c.cfg.Version == nil {
		return 0
	}
	return c.cfg.Version(value)
}

// jitter shortens ttl by a random fraction of at most TTLJitter: a
// configured TTL stays an upper bound.
func (c *Cache) jitter(ttl time.Duration) time.Duration {
	if c.cfg.TTLJitter <= 0 {
		return ttl
	}
	return ttl - time.Duration(rand.Float64()*c.cfg.TTLJitter*float64(ttl)) // #nosec G404 -- expiry jitter, not a secret
}

// lifetime is how long a new entry stays fresh. Without SWR nothing is
// served stale: the entry is fresh until Redis drops it, which is also
// XFetch's expiry.
func (c *Cache) lifetime(absent bool) time.Duration {
	switch {
	case absent:
		return c.cfg.NegativeTTL
	case c.cfg.Mode != ModeSWR:
		return c.cfg.TTL
	}
	return c.cfg.SoftTTL
}

// The envelope is a fixed 36-byte header (magic, flags, soft expiry, load
// time, hard expiry, version) followed by the payload: compact,
// allocation-light, and recognisable, so a foreign value under our key is
// detected instead of being served. Version 2 of the format added the hard
// expiry and the version: a version-1 entry is refused as corrupt and
// reloaded once.
const (
	envelopeMagic       = "sg\x02"
	envelopeHeader      = len(envelopeMagic) + 1 + 8 + 8 + 8 + 8
	flagAbsent     byte = 1
	flagStatic     byte = 2
	// flagSigned: an HMAC-SHA256 tag (macSize bytes) follows the payload.
	flagSigned byte = 4
	macSize         = sha256.Size
)

var errCorrupt = errors.New("cache: value is not a stampede-guard envelope")

func (e Entry) encode() []byte {
	b := make([]byte, envelopeHeader, envelopeHeader+len(e.Value))
	copy(b, envelopeMagic)
	if e.Absent {
		b[3] = flagAbsent
	}
	if e.Static {
		b[3] |= flagStatic
	}
	// Two's-complement reinterpretations, undone exactly by decodeEntry.
	binary.BigEndian.PutUint64(b[4:], uint64(e.SoftExpiry.UnixMicro()))  // #nosec G115 -- lossless round trip
	binary.BigEndian.PutUint64(b[12:], uint64(e.Delta.Microseconds()))   // #nosec G115 -- lossless round trip
	binary.BigEndian.PutUint64(b[20:], uint64(e.HardExpiry.UnixMicro())) // #nosec G115 -- lossless round trip
	binary.BigEndian.PutUint64(b[28:], e.Version)
	return append(b, e.Value...)
}

func decodeEntry(b []byte) (Entry, error) {
	if len(b) < envelopeHeader || string(b[:3]) != envelopeMagic || b[3]&^(flagAbsent|flagStatic|flagSigned) != 0 ||
		b[3]&(flagAbsent|flagStatic) == flagAbsent|flagStatic {
		return Entry{}, errCorrupt
	}
	e := Entry{
		Absent:     b[3]&flagAbsent != 0, // flagSigned is seal's and open's business
		Static:     b[3]&flagStatic != 0,
		SoftExpiry: time.UnixMicro(int64(binary.BigEndian.Uint64(b[4:]))),             // #nosec G115 -- undoes encode's reinterpretation
		Delta:      time.Duration(binary.BigEndian.Uint64(b[12:])) * time.Microsecond, // #nosec G115 -- undoes encode's reinterpretation
		HardExpiry: time.UnixMicro(int64(binary.BigEndian.Uint64(b[20:]))),            // #nosec G115 -- undoes encode's reinterpretation
		Version:    binary.BigEndian.Uint64(b[28:]),
	}
	if !e.Absent {
		e.Value = b[envelopeHeader:]
	} else if len(b) != envelopeHeader {
		return Entry{}, errCorrupt
	}
	return e, nil
}

// errForged is a signed envelope whose tag does not verify, or an unsigned
// one where a signature is required.
var errForged = errors.New("cache: value's signature does not verify")

// seal encodes e for the Redis key key. With a signing key the envelope is
// flagged signed and ends with an HMAC-SHA256 over the key name and
// everything before the tag, so a value planted by anyone who can write to
// Redis, or a genuine one copied under another key, does not verify.
func (c *Cache) seal(key string, e Entry) []byte {
	b := e.encode()
	if len(c.cfg.SigningKey) == 0 {
		return b
	}
	b[3] |= flagSigned
	return append(b, c.mac(key, b)...)
}

// open decodes the value of the Redis key key (the entry's own name, also
// for a copy's value). With a signing key only a signed envelope whose tag
// verifies (constant-time compare) is accepted; without one a signed
// envelope's tag is dropped unchecked, so turning signing off costs no
// reload.
func (c *Cache) open(key string, b []byte) (Entry, error) {
	signed := len(b) >= envelopeHeader && b[3]&flagSigned != 0
	switch {
	case signed && len(b) < envelopeHeader+macSize:
		return Entry{}, errCorrupt
	case signed:
		body, tag := b[:len(b)-macSize], b[len(b)-macSize:]
		if len(c.cfg.SigningKey) > 0 && !hmac.Equal(tag, c.mac(key, body)) {
			return Entry{}, errForged
		}
		b = body
	case len(c.cfg.SigningKey) > 0:
		return Entry{}, errForged
	}
	return decodeEntry(b)
}

// mac is the tag of body stored under key: the key name is length-prefixed
// so that no two (key, body) pairs share an input.
func (c *Cache) mac(key string, body []byte) []byte {
	h := hmac.New(sha256.New, c.cfg.SigningKey)
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(key)))
	h.Write(n[:])
	h.Write([]byte(key))
	h.Write(body)
	return h.Sum(nil)
}
