package admin

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Lock holders stay listed for the console window after their last fill
// or release, the latest first, and then drop out.
func TestLockHistoryWindow(t *testing.T) {
	h := &LockHistory{keys: map[string]*recentLock{}, last: map[string]time.Time{}}
	t0 := time.Now()
	h.seen("a", true, t0.Add(-consoleWindow-time.Second)) // too old
	h.seen("b", true, t0.Add(-2*time.Second))
	h.seen("b", false, t0.Add(-time.Second))
	h.seen("c", true, t0)
	got := h.recent(10)
	if len(got) != 2 || got[0].Key != "c" || got[1].Key != "b" {
		t.Fatalf("recent = %+v, want c then b (a is older than %s)", got, consoleWindow)
	}
	if got[1].Fills != 1 || got[1].Releases != 1 {
		t.Errorf("b: %d fills, %d releases; want 1 and 1", got[1].Fills, got[1].Releases)
	}
	if got := (*LockHistory)(nil).recent(10); got == nil || len(got) != 0 {
		t.Errorf("a nil history gives %v, want an empty list (JSON [])", got)
	}
}

// Hot keys: the most requested first, a bounded number of distinct keys.
func TestHotKeysTopAndBound(t *testing.T) {
	h := NewRequestTally()
	for i, n := range []int{3, 9, 5} {
		for range n {
			h.add(int64(i)) // a product id, as the middleware counts it
		}
	}
	want := []keyCount{{"product 1", 9}, {"product 2", 5}}
	if got := h.top(2); !reflect.DeepEqual(got, want) {
		t.Errorf("top(2) = %v, want %v", got, want)
	}
	for i := range maxTracked + 100 {
		h.add(int64(90_000 + i))
	}
	if n := len(h.cur); n > maxTracked {
		t.Errorf("%d distinct keys counted, want at most %d", n, maxTracked)
	}
	// Whatever the ids, the memory held is bounded: at most maxTracked ids
	// per half-window, each a fixed-size number.
	if entries, keyBytes := tallyFootprint(h); entries > 2*maxTracked || keyBytes > 8*entries {
		t.Errorf("tally holds %d ids in %d key bytes, want at most %d ids of 8 bytes", entries, keyBytes, 2*maxTracked)
	}
}

// TestTallyKeepsOnlyTakenIDs: the tally keeps only ids the handler took
// (200, 304, 404) in canonical form, in bounded memory: huge ids (60 KB),
// random bytes, non-canonical spellings and refused reads (400, 429) leave
// nothing behind. (internal/app's TestConsoleTallyCountsOnlyValidatedIDs
// drives the same reads through the whole server.)
func TestTallyKeepsOnlyTakenIDs(t *testing.T) {
	h := NewRequestTally()
	h.Read("1", http.StatusOK)
	h.Read("2", http.StatusNotModified)
	h.Read("999999", http.StatusNotFound)
	h.Read("3", http.StatusTooManyRequests) // refused by the rate limit
	h.Read("4", http.StatusBadRequest)
	huge := "9" + strings.Repeat("0", 60<<10) // 60 KB of digits: no int64
	for i := range 300 {
		h.Read(huge+fmt.Sprint(i), http.StatusOK)
		raw := make([]byte, 1+rand.IntN(200))
		for j := range raw {
			raw[j] = byte(rand.IntN(256))
		}
		raw[0] = 'x' // never a canonical id by chance (a lone "7" is one)
		h.Read(string(raw), http.StatusOK)
		h.Read([]string{"+1", "01", "0", "-7", "1.5", "1e3"}[i%6], http.StatusOK)
	}
	entries, keyBytes := tallyFootprint(h)
	if entries != 3 {
		t.Errorf("tally holds %d ids, want 3 (1, 2, 999999): refused or malformed reads were counted", entries)
	}
	if keyBytes > 20*entries {
		t.Errorf("tally keys hold %d bytes for %d ids: unvalidated ids are kept", keyBytes, entries)
	}
}

// tallyFootprint is what the tally holds over both half-windows: the ids
// and the bytes of their keys (a string key's length, a number's size).
func tallyFootprint(h *RequestTally) (entries, keyBytes int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range []any{h.cur, h.old} {
		it := reflect.ValueOf(m).MapRange()
		for it.Next() {
			entries++
			if k := it.Key(); k.Kind() == reflect.String {
				keyBytes += k.Len()
			} else {
				keyBytes += int(k.Type().Size())
			}
		}
	}
	return entries, keyBytes
}
