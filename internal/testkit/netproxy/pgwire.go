package netproxy

import (
	"encoding/binary"
	"sync/atomic"
)

// PostgreSQL frontend protocol codes of the untyped first messages.
const (
	pgSSLRequest    = 80877103
	pgGSSEncRequest = 80877104
)

// pgParser follows the PostgreSQL frontend message stream of one connection
// across chunk boundaries and counts Execute ('E') messages. The first
// message (startup, SSL or GSS request, cancel) has no type byte: a length
// and a code; every later one is a type byte and a length.
type pgParser struct {
	typed bool    // past the startup message
	hdr   [8]byte // header being assembled
	n     int     // bytes of hdr filled
	skip  int     // body bytes of the current message still to pass
}

// feed consumes one chunk and returns how many Execute messages began in it.
func (p *pgParser) feed(b []byte) int {
	executes := 0
	for len(b) > 0 {
		if p.skip > 0 {
			k := min(p.skip, len(b))
			p.skip -= k
			b = b[k:]
			continue
		}
		size := 5
		if !p.typed {
			size = 8
		}
		k := copy(p.hdr[p.n:size], b)
		p.n += k
		b = b[k:]
		if p.n < size {
			return executes
		}
		p.n = 0
		if !p.typed {
			length := int(binary.BigEndian.Uint32(p.hdr[0:4]))
			code := binary.BigEndian.Uint32(p.hdr[4:8])
			p.skip = max(0, length-8)
			// After an SSL or GSS request the real startup message follows,
			// untyped too.
			p.typed = code != pgSSLRequest && code != pgGSSEncRequest
			continue
		}
		if p.hdr[0] == 'E' {
			executes++
		}
		p.skip = max(0, int(binary.BigEndian.Uint32(p.hdr[1:5]))-4)
	}
	return executes
}

// CountPGExecutes is an Options.Observe that adds to n every PostgreSQL
// Execute message a client sends: with pgx, one per query, so a test or an
// experiment measures on the wire how many queries reached the database.
func CountPGExecutes(n *atomic.Int64) func() func([]byte) {
	return func() func([]byte) {
		var parser pgParser // one per connection: messages span chunks
		return func(b []byte) { n.Add(int64(parser.feed(b))) }
	}
}
