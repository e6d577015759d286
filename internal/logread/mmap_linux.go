//go:build linux

package logread

import (
	"os"
	"syscall"
)

// mapRegion maps n bytes of f from off, read-only and private, and
// returns the mapping (from the page boundary at or before off) and
// where off is in it. writable maps it for writing too (the writes stay
// private): tests overwrite what the reader releases.
func mapRegion(f *os.File, off, n int64, writable bool) ([]byte, int, error) {
	page := int64(os.Getpagesize())
	start := off &^ (page - 1)
	prot := syscall.PROT_READ
	if writable {
		prot |= syscall.PROT_WRITE
	}
	m, err := syscall.Mmap(int(f.Fd()), start, int(n+off-start), prot, syscall.MAP_PRIVATE)
	if err != nil {
		return nil, 0, err
	}
	_ = syscall.Madvise(m, syscall.MADV_SEQUENTIAL)
	return m, int(off - start), nil
}

// dropPages gives back the pages of b, which the reader is done with:
// touched again, they would be read again from the file.
func dropPages(b []byte) { _ = syscall.Madvise(b, syscall.MADV_DONTNEED) }

// unmapRegion undoes mapRegion.
func unmapRegion(m []byte) error { return syscall.Munmap(m) }
