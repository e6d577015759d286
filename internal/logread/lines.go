package logread

import (
	"bytes"
	"io"
)

// chunkSize is how much is read at a time (a variable for tests, which
// read in small chunks to exercise their reuse). A chunk is not written
// again while anything may refer to it, so strings can alias it.
var chunkSize = 1 << 20

// maxLine bounds one physical line; past it the line is cut and counted,
// so that a corrupt file without newlines cannot exhaust memory.
const maxLine = 256 << 20

// lineReader splits a stream into lines without copying them: each line is
// a slice of a chunk.
//
// Chunks are new buffers, never written again, unless the reader recycles
// them: its user then promises that, when it asks for another line,
// nothing refers to the chunks before the current one (see seq) but those
// it names in keep, and the others are read into again. A new chunk for every MiB of the
// log made most of the reader's garbage; with reuse the collector runs
// less than half as often, and zeroing new chunks and the page faults of
// fresh memory go too. Only the stderr reader recycles (and then the
// interpreter copies the text it keeps); a log in an envelope keeps its
// lines in the envelope's reader for longer.
type lineReader struct {
	r   io.Reader
	buf []byte
	pos int
	eof bool
	err error

	recycle bool
	seq     uint64    // number of buf, counting chunks from 1
	keep    [4]uint64 // numbers of chunks still referred to (0: none)
	old     []oldChunk
	spare   [][]byte // chunks to read into again
}

// oldChunk is a chunk before the current one still referred to.
type oldChunk struct {
	b   []byte
	seq uint64
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
	var nb []byte
	if l.recycle {
		nb = l.reuse(size)[:len(rest)]
	} else {
		nb = make([]byte, len(rest), size)
	}
	copy(nb, rest)
	if l.recycle && l.buf != nil {
		l.old = append(l.old, oldChunk{l.buf[:cap(l.buf)], l.seq})
		l.release()
	}
	l.seq++
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

// reuse returns a chunk of at least size bytes: a spare one, or a new one.
func (l *lineReader) reuse(size int) []byte {
	for i, b := range l.spare {
		if cap(b) >= size {
			l.spare[i] = l.spare[len(l.spare)-1]
			l.spare[len(l.spare)-1] = nil
			l.spare = l.spare[:len(l.spare)-1]
			return b[:cap(b)]
		}
	}
	return make([]byte, size)
}

// maxSpare bounds the chunks kept for reuse: one or two are in use at a
// time, more only while an entry spans several.
const maxSpare = 4

// release makes the old chunks that keep does not name spare.
func (l *lineReader) release() {
	n := 0
	for _, c := range l.old {
		if c.seq == l.keep[0] || c.seq == l.keep[1] || c.seq == l.keep[2] || c.seq == l.keep[3] {
			l.old[n] = c
			n++
			continue
		}
		if poisonChunks {
			for i := range c.b {
				c.b[i] = 0xff
			}
		}
		if len(l.spare) < maxSpare && cap(c.b) <= 4*chunkSize {
			l.spare = append(l.spare, c.b)
		}
	}
	clear(l.old[n:])
	l.old = l.old[:n]
}

// poisonChunks, set by tests, overwrites a chunk when it is released, so
// that text still referring to it shows.
var poisonChunks bool
