package hotkeys

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkObserve is the cost a product read pays for detection (Zipf
// keys, one goroutine per core).
func BenchmarkObserve(b *testing.B) {
	d := New(Config{})
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = key(uint64(i))
	}
	b.RunParallel(func(pb *testing.PB) {
		z := rand.NewZipf(rand.New(rand.NewPCG(rand.Uint64(), 1)), 1.1, 1, 999)
		for pb.Next() {
			d.Observe(keys[z.Uint64()])
		}
	})
}

// BenchmarkHot is the cost of asking, on every read, whether a key is hot.
func BenchmarkHot(b *testing.B) {
	d := New(Config{Pinned: []string{key(1)}})
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = d.Hot(key(1))
		}
	})
}
