//go:build !linux

package logread

import (
	"errors"
	"os"
)

// mapRegion does not map files but on Linux: they are read.
func mapRegion(f *os.File, off, n int64, writable bool) ([]byte, int, error) {
	return nil, 0, errors.ErrUnsupported
}

func dropPages(b []byte) {}

func unmapRegion(m []byte) error { return nil }
