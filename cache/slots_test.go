package cache

import (
	"fmt"
	"testing"
	"time"
)

// copyNumberBySearch is the copy numbering as first written: copy i
// searched its range anew after replaying the searches of copies 1..i-1.
// copyNumbers must name the same copies (instances of two versions share
// one Redis during a rolling deploy), at a fraction of the work.
func copyNumberBySearch(key string, i, copies int) int {
	used := make([]bool, 0, copies)
	var pick int
	for j := 1; j <= i; j++ {
		pick = searchCopy(key, j, copies, used)
		for len(used) <= pick {
			used = append(used, false)
		}
		used[pick] = true
	}
	return pick
}

func TestCopyNumbersMatchTheSearch(t *testing.T) {
	t.Parallel()
	for _, copies := range []int{2, 3, 4, 5, 8, 13, 16, 24} {
		for id := range 40 {
			key := fmt.Sprintf("ns:product:v1:{%d}", id+1)
			got := copyNumbers(key, copies)
			if len(got) != copies-1 {
				t.Fatalf("copyNumbers(%q, %d): %d numbers, want %d", key, copies, len(got), copies-1)
			}
			for i := 1; i < copies; i++ {
				if want := copyNumberBySearch(key, i, copies); got[i-1] != want {
					t.Fatalf("copyNumbers(%q, %d)[copy %d] = %d, want %d (the search's)", key, copies, i, got[i-1], want)
				}
			}
		}
	}
}

// TestManyCopiesAreCheap names 1000 copies of a key. The per-copy search
// cost copies³ slot hashes per key: HOT_KEY_COPIES=1000 never finished
// starting (CheckKeyScheme names every copy), and 8 copies cost 0.17 ms
// of CPU per write. The bound is generous (the scan takes about a
// millisecond); the search took hours.
func TestManyCopiesAreCheap(t *testing.T) {
	t.Parallel()
	done := make(chan []int, 1)
	go func() { done <- copyNumbers("product:v1:{42}", 1000) }()
	select {
	case nums := <-done:
		seen := make(map[int]bool, len(nums))
		for _, n := range nums {
			if n < 1 || seen[n] {
				t.Fatalf("copy number %d repeated or below 1", n)
			}
			seen[n] = true
		}
		if len(seen) != 999 {
			t.Fatalf("%d copy numbers, want 999", len(seen))
		}
	case <-time.After(20 * time.Second):
		t.Fatal("1000 copies not named within 20 s")
	}
}

// BenchmarkCopyKeys is the cost of naming a key's copies, once per write
// (and per hot read without the memo): go test -run '^$' -bench CopyKeys ./cache/
func BenchmarkCopyKeys(b *testing.B) {
	for _, copies := range []int{3, 8, 16, 64} {
		b.Run(fmt.Sprint(copies), func(b *testing.B) {
			for b.Loop() {
				copyNumbers("product:v1:{42}", copies)
			}
		})
	}
}
