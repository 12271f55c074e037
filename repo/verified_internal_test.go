package repo

import (
	"testing"

	"github.com/stampede-guard/api/cache"
)

// TestVerifiedSkipsOnlyIdenticalPayloads: the memo of verified payloads
// answers only for the exact bytes it verified; any other payload for the
// same product, however close, is verified again (and refused when bad).
func TestVerifiedSkipsOnlyIdenticalPayloads(t *testing.T) {
	good := []byte(`{"id":7,"name":"lamp","price_cents":1200,"updated_at":"2026-01-02T03:04:05Z"}`)
	v := newVerified()
	if _, err := v.check(cache.Result{Value: good}, 7); err != nil {
		t.Fatalf("good payload refused: %v", err)
	}
	tests := []struct {
		name    string
		payload string
		id      int64
		want    string // the name served; "" when refused
	}{
		{"same bytes", string(good), 7, "lamp"},
		{"renamed, still valid", `{"id":7,"name":"desk","price_cents":1200,"updated_at":"2026-01-02T03:04:05Z"}`, 7, "desk"},
		{"another product's payload", `{"id":8,"name":"lamp","price_cents":1200,"updated_at":"2026-01-02T03:04:05Z"}`, 7, ""},
		{"foreign field", `{"id":7,"name":"lamp","price_cents":1200,"updated_at":"2026-01-02T03:04:05Z","x":1}`, 7, ""},
		{"same bytes, other id", string(good), 9, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := v.check(cache.Result{Value: []byte(tc.payload)}, tc.id)
			switch {
			case tc.want == "" && err == nil:
				t.Fatalf("served %+v, want a refusal", got)
			case tc.want != "" && err != nil:
				t.Fatalf("refused: %v", err)
			case got.Name != tc.want:
				t.Fatalf("served name %q, want %q", got.Name, tc.want)
			}
		})
	}
	// The cache may reuse the slice it handed out: the memo keeps its own.
	buf := []byte(string(good))
	if _, err := v.check(cache.Result{Value: buf}, 7); err != nil {
		t.Fatal(err)
	}
	copy(buf, `{"id":8`)
	if _, err := v.check(cache.Result{Value: buf}, 7); err == nil {
		t.Fatal("a payload rewritten in place after verification was served")
	}
}
