package cache

import (
	"encoding/binary"
	"errors"
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
}

// The envelope is a fixed 20-byte header followed by the payload: compact,
// allocation-light, and recognisable, so a foreign value under our key is
// detected instead of being served.
const (
	envelopeMagic       = "sg\x01"
	envelopeHeader      = len(envelopeMagic) + 1 + 8 + 8
	flagAbsent     byte = 1
	flagStatic     byte = 2
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
	binary.BigEndian.PutUint64(b[4:], uint64(e.SoftExpiry.UnixMicro()))
	binary.BigEndian.PutUint64(b[12:], uint64(e.Delta.Microseconds()))
	return append(b, e.Value...)
}

func decodeEntry(b []byte) (Entry, error) {
	if len(b) < envelopeHeader || string(b[:3]) != envelopeMagic || b[3]&^(flagAbsent|flagStatic) != 0 || b[3] == flagAbsent|flagStatic {
		return Entry{}, errCorrupt
	}
	e := Entry{
		Absent:     b[3]&flagAbsent != 0,
		Static:     b[3]&flagStatic != 0,
		SoftExpiry: time.UnixMicro(int64(binary.BigEndian.Uint64(b[4:]))),
		Delta:      time.Duration(binary.BigEndian.Uint64(b[12:])) * time.Microsecond,
	}
	if !e.Absent {
		e.Value = b[envelopeHeader:]
	} else if len(b) != envelopeHeader {
		return Entry{}, errCorrupt
	}
	return e, nil
}
