package hotkeys

import "hash/maphash"

// sketch is a count-min sketch: depth rows of width counters, each row
// indexed by its own hash of the key. A key's count is the smallest of its
// depth counters, which can only overestimate (other keys share counters)
// and never underestimate. Memory is fixed whatever the number of distinct
// keys, which is the point: a flood of random ids cannot grow it.
//
// Increments are conservative (only the counters at the current minimum
// go up), which keeps the overestimate of cold keys far below the plain
// sketch's, so a uniform load does not look hot through collisions.
//
// The rows' indexes come from one 64-bit hash, as h1 + i·h2 from its two
// halves (Kirsch and Mitzenmacher, "Less hashing, same performance"): the
// same collision bounds as depth independent hashes, at the cost of one.
type sketch struct {
	width  uint64
	seed   maphash.Seed
	counts [][]uint32
	idx    []uint64 // scratch for add; guarded by the Detector's mutex
}

func newSketch(width, depth int) *sketch {
	w := uint64(width) // #nosec G115 -- width > 0: Config defaults it to 4096
	s := &sketch{width: w, seed: maphash.MakeSeed(), counts: make([][]uint32, depth), idx: make([]uint64, depth)}
	for i := range depth {
		s.counts[i] = make([]uint32, width)
	}
	return s
}

// hash is the key's hash for add; safe without the Detector's mutex.
func (s *sketch) hash(key string) uint64 { return maphash.String(s.seed, key) }

// add counts one more occurrence of the key hashed to h and returns its
// new estimate.
func (s *sketch) add(h uint64) uint32 {
	least := ^uint32(0)
	at, step := h&0xffffffff, h>>32|1 // row i: h1 + i·h2; h2 odd, so rows differ
	for i := range s.idx {
		s.idx[i] = at % s.width
		least = min(least, s.counts[i][s.idx[i]])
		at += step
	}
	if least == ^uint32(0) {
		return least // saturated; a window never gets near 4 billion reads
	}
	least++
	for i, j := range s.idx {
		if s.counts[i][j] < least {
			s.counts[i][j] = least
		}
	}
	return least
}

// reset zeroes every counter for the next window.
func (s *sketch) reset() {
	for _, row := range s.counts {
		clear(row)
	}
}
