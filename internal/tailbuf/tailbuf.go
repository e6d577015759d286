// Package tailbuf keeps the end of what a child process writes: a reset
// command's standard error, a shard process's output. An error quotes the
// last lines a process wrote, however much it wrote before.
package tailbuf

import (
	"bytes"
	"sync"
)

// Buffer keeps about the last Max bytes written to it; it is an
// io.Writer that may be written from several goroutines (a process's
// standard output and error at once).
type Buffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

// New returns a Buffer that keeps the last max bytes.
func New(max int) *Buffer { return &Buffer{max: max} }

// Write keeps p's end. It trims only once twice max bytes are held, so
// that many small writes do not each copy the buffer.
func (t *Buffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2*t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

// String is the last max bytes written, starting on a whole line when
// the cut fell inside one (unless that line is all there is).
func (t *Buffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.b
	if len(b) > t.max {
		cut := len(b) - t.max
		whole := b[cut-1] == '\n'
		b = b[cut:]
		if i := bytes.IndexByte(b, '\n'); !whole && i >= 0 && i < len(b)-1 {
			b = b[i+1:]
		}
	}
	return string(b)
}
