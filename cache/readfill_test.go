package cache

import (
	"testing"
	"time"
)

// TestReadFill: the admin console reads the signals the cache sends, in
// today's format (with and without a signing key) and the previous one; a
// holder that let go without a value is a release, not a fill.
func TestReadFill(t *testing.T) {
	soft := time.UnixMicro(1764563000000000)
	plain := &Cache{}
	signed := &Cache{cfg: Config{SigningKey: []byte("a signing key, thirty-two bytes!")}}
	for _, tc := range []struct {
		name, payload, key string
		stored             bool
	}{
		{"stored", plain.fillMessage("ns:product:v1:{7}", soft, 3), "ns:product:v1:{7}", true},
		{"stored, signed", signed.fillMessage("product:v1:{7}", soft, 3), "product:v1:{7}", true},
		{"released without a value", plain.fillMessage("product:v1:{7}", time.Time{}, 0), "product:v1:{7}", false},
		{"previous format, stored", "1764563000000000 product:v1:{7}", "product:v1:{7}", true},
		{"previous format, released", "-62135596800000000 product:v1:{7}", "product:v1:{7}", false},
		{"zero", "0 product:v1:{7}", "product:v1:{7}", false},
		{"garbage", "garbage", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, stored := ReadFill(tc.payload)
			if key != tc.key || stored != tc.stored {
				t.Errorf("ReadFill(%q) = %q, %v; want %q, %v", tc.payload, key, stored, tc.key, tc.stored)
			}
		})
	}
}
