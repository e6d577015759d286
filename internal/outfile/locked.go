package outfile

import (
	"io"
	"sync"
)

// Locked is a writer whose writes are serialized, for a stream that
// several goroutines write lines to (a command's shards, a shell
// command's two streams), each line arriving whole.
type Locked struct {
	mu sync.Mutex
	w  io.Writer
}

// Lock returns w with its writes serialized.
func Lock(w io.Writer) *Locked { return &Locked{w: w} }

func (l *Locked) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
