package netproxy

import (
	"bytes"
	"encoding/binary"
	"testing"
)

func TestPGParserCountsExecutes(t *testing.T) {
	startup := func() []byte {
		b := binary.BigEndian.AppendUint32(nil, 0)
		b = binary.BigEndian.AppendUint32(b, 196608) // protocol 3.0
		b = append(b, "user\x00postgres\x00\x00"...)
		binary.BigEndian.PutUint32(b, uint32(len(b)))
		return b
	}
	msg := func(typ byte, body string) []byte {
		b := []byte{typ}
		b = binary.BigEndian.AppendUint32(b, uint32(4+len(body)))
		return append(b, body...)
	}
	ssl := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 8), pgSSLRequest)
	// A query as pgx sends a prepared statement: Bind, Describe, Execute, Sync.
	query := bytes.Join([][]byte{msg('B', "\x00\x00\x00\x00"), msg('D', "P\x00"), msg('E', "\x00\x00\x00\x00\x00"), msg('S', "")}, nil)
	// A body that contains an 'E' byte must not be counted.
	tricky := msg('P', "EEEE SELECT 'E'")
	stream := bytes.Join([][]byte{startup(), msg('Q', "-- ping\x00"), tricky, query, query, msg('X', "")}, nil)

	tests := []struct {
		name   string
		stream []byte
		chunk  int // split the stream into chunks of this size; 0 = one chunk
		want   int
	}{
		{"one chunk", stream, 0, 2},
		{"byte by byte", stream, 1, 2},
		{"chunks of 3", stream, 3, 2},
		{"chunks of 7", stream, 7, 2},
		{"after an SSL request", append(append([]byte(nil), ssl...), stream...), 5, 2},
		{"startup only", startup(), 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p pgParser
			got := 0
			size := tt.chunk
			if size == 0 {
				size = len(tt.stream)
			}
			for b := tt.stream; len(b) > 0; {
				k := min(size, len(b))
				got += p.feed(b[:k])
				b = b[k:]
			}
			if got != tt.want {
				t.Errorf("got %d Execute messages, want %d", got, tt.want)
			}
		})
	}
}
