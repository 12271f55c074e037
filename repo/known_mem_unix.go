//go:build unix

package repo

import (
	"fmt"
	"syscall"
	"unsafe"
)

// filterWords returns n zeroed words for a filter's bits, mapped outside
// the Go heap. The garbage collector paces itself on the live heap, and
// this app lets the heap grow to five times it between collections
// (defaultGCPercent, internal/app): 24 MiB of bits on the heap would cost
// up to 120 MiB of RSS, mapped they cost their size (the catalogue
// experiment measured both). free unmaps them: nothing may touch the words
// after it.
func filterWords(n int) (words []uint64, free func(), err error) {
	b, err := syscall.Mmap(-1, 0, n*8, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, fmt.Errorf("map %d bytes for the id filter: %w", n*8, err)
	}
	// #nosec G103 -- a page-aligned anonymous mapping of n*8 bytes, viewed as n words; unmapped only by free.
	words = unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), n)
	return words, func() { _ = syscall.Munmap(b) }, nil
}
