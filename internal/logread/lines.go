package logread

import (
	"bytes"
	"io"
)

// chunkSize is how much is read at a time. Every chunk is a new buffer
// that is never written again once filled, so strings can alias it.
const chunkSize = 1 << 20

// maxLine bounds one physical line; past it the line is cut and counted,
// so that a corrupt file without newlines cannot exhaust memory.
const maxLine = 256 << 20

// lineReader splits a stream into lines without copying them: each line is
// a slice of an immutable chunk.
type lineReader struct {
	r   io.Reader
	buf []byte
	pos int
	eof bool
	err error
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: r}
}

// next returns the next line without its "\n" (and "\r"). complete is
// false for a last line that has no newline. ok is false at the end.
func (l *lineReader) next() (line []byte, complete, ok bool) {
	for {
		if i := bytes.IndexByte(l.buf[l.pos:], '\n'); i >= 0 {
			line = l.buf[l.pos : l.pos+i]
			l.pos += i + 1
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			return line, true, true
		}
		if !l.eof && len(l.buf)-l.pos >= maxLine {
			// No newline in maxLine bytes: give out what we have as a
			// line cut short; the caller counts it.
			line = l.buf[l.pos:]
			l.pos = len(l.buf)
			return line, false, true
		}
		if l.eof {
			if l.pos < len(l.buf) {
				line = l.buf[l.pos:]
				l.pos = len(l.buf)
				return line, false, true
			}
			return nil, false, false
		}
		l.fill()
	}
}

// fill moves the unfinished line into a new chunk and reads after it.
func (l *lineReader) fill() {
	rest := l.buf[l.pos:]
	size := chunkSize
	for size < 2*len(rest) {
		size *= 2
	}
	nb := make([]byte, len(rest), size)
	copy(nb, rest)
	for len(nb) < cap(nb) {
		n, err := l.r.Read(nb[len(nb):cap(nb)])
		nb = nb[:len(nb)+n]
		if err != nil {
			l.eof = true
			if err != io.EOF {
				l.err = err
			}
			break
		}
		if n > 0 && bytes.IndexByte(nb[len(nb)-n:], '\n') >= 0 && len(nb) > cap(nb)/2 {
			break
		}
	}
	l.buf, l.pos = nb, 0
}
