package cache

import (
	"bytes"
	"testing"
	"time"
)

// FuzzOpen: whatever bytes sit under a key, open returns an entry or an
// error, never panics; with a signing key it accepts only what seal made
// for that key (a sealed entry round-trips, a changed byte is refused).
func FuzzOpen(f *testing.F) {
	signed := &Cache{cfg: Config{SigningKey: []byte("fuzz key, thirty-two bytes long!")}}
	plain := &Cache{}
	e := Entry{Value: []byte(`{"id":1}`), SoftExpiry: time.UnixMicro(1_700_000_000_000_000), Delta: time.Millisecond,
		HardExpiry: time.UnixMicro(1_700_000_060_000_000), Version: 7}
	f.Add([]byte("k"), signed.seal("k", e), 0)
	f.Add([]byte("k"), plain.seal("k", e), 3)
	f.Add([]byte("k"), signed.seal("k", Entry{Absent: true, SoftExpiry: e.SoftExpiry}), 25)
	f.Add([]byte(""), []byte("sg\x02\x04"), 1)
	f.Fuzz(func(t *testing.T, key, b []byte, flip int) {
		for _, c := range []*Cache{plain, signed} {
			_, _ = c.open(string(key), b)
		}
		if len(b) < envelopeHeader || b[3]&(flagAbsent|flagStatic) == flagAbsent|flagStatic {
			return
		}
		in := Entry{Absent: b[3]&flagAbsent != 0, Static: b[3]&flagStatic != 0, SoftExpiry: e.SoftExpiry, Delta: e.Delta,
			HardExpiry: e.HardExpiry, Version: e.Version}
		if !in.Absent {
			in.Value = b[envelopeHeader:]
		}
		sealed := signed.seal(string(key), in)
		out, err := signed.open(string(key), sealed)
		if err != nil || !bytes.Equal(out.Value, in.Value) || out.Absent != in.Absent || out.Static != in.Static ||
			!out.SoftExpiry.Equal(in.SoftExpiry) || out.Delta != in.Delta || !out.HardExpiry.Equal(in.HardExpiry) || out.Version != in.Version {
			t.Fatalf("round trip of %+v: got %+v, %v", in, out, err)
		}
		i := (flip%len(sealed) + len(sealed)) % len(sealed)
		sealed[i] ^= 0x01
		if _, err := signed.open(string(key), sealed); err == nil {
			t.Fatalf("byte %d of a sealed entry changed, still accepted", i)
		}
		if _, err := signed.open(string(key)+"x", signed.seal(string(key), in)); err == nil {
			t.Fatalf("entry sealed for %q accepted under %q", key, string(key)+"x")
		}
	})
}
