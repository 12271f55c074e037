//go:build !unix

package repo

// filterWords returns n zeroed words for a filter's bits: on the Go heap
// where there is no mmap (see known_mem_unix.go for why it matters).
func filterWords(n int) (words []uint64, free func(), err error) {
	return make([]uint64, n), func() {}, nil
}
