//go:build unix

package outfile

import (
	"os"
	"syscall"
)

// mask is the process's file mode creation mask, which os.CreateTemp's
// 0600 does not show. It is read once, at start, before any goroutine may
// create a file: reading it means setting it.
var mask = func() os.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return os.FileMode(m)
}()

func umask() os.FileMode { return mask }
