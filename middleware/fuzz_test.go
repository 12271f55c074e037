package middleware

import (
	"strings"
	"testing"
)

// FuzzBearer: an accepted token is what the header carried after
// "Bearer ", printable ASCII without spaces, at most maxKeyLen long.
func FuzzBearer(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer abc", "Basic abc", "Bearer", "Bearer ", "Bearer a b", "Bearer \x00", "Bearer  x", "Token x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		tok, ok := bearer(h)
		if !ok {
			return
		}
		if tok == "" || len(tok) > maxKeyLen || !strings.Contains(h, " "+tok) {
			t.Errorf("bearer(%q) = %q", h, tok)
		}
		for i := 0; i < len(tok); i++ {
			if tok[i] < 0x21 || tok[i] > 0x7e {
				t.Errorf("bearer(%q) accepted a token with byte %#x", h, tok[i])
			}
		}
	})
}
