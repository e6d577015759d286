//go:build !linux

package proxy

import (
	"io"
	"syscall"
)

// rawConn: reads go through the connection's own Read off Linux.
func rawConn(io.Reader) syscall.RawConn { return nil }

func (p *pump) runRaw(syscall.RawConn) error { panic("unreachable") }

func asRawWriter(w io.Writer) io.Writer { return w }
