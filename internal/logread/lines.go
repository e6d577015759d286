package logread

import (
	"bytes"
	"io"
	"os"
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

	// mp, when not nil, is a mapping of the file that buf is while inMap:
	// see mapped.
	mp    *fileMap
	inMap bool
	// relAt is the position in buf from which the user of a mapping
	// calls release: every chunkSize bytes.
	relAt int
}

// fileMap is a plain log file's region mapped into memory (on Linux),
// which the line reader reads its lines from instead of reading them into
// chunks: no copy of the log from the kernel's page cache (a fifth of the
// time reading the realistic log took), and no chunks to recycle.
// The pages read are given back as the reader leaves them behind
// (release), so that they do not add up in the process's memory. The
// interpreter copies what it keeps from the lines, as it does with
// recycled chunks: nothing but the reader touches the mapping, and a
// file that shrinks under it (a fault) is caught in Reader.fill.
type fileMap struct {
	m        []byte // from a page boundary
	released int    // bytes at the start of m given back
	poison   bool   // overwrite what is released instead (tests)
	// read is where the bytes read are counted, for Reader.Progress:
	// the part of the file region before buf[pos].
	read func(int64)
}

// oldChunk is a chunk before the current one still referred to.
type oldChunk struct {
	b   []byte
	seq uint64
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: r, relAt: int(^uint(0) >> 1)}
}

// next returns the next line without its "\n" (and "\r"). complete is
// false for a line cut at maxLine, whose end was dropped; a last line
// without a newline is whole (a log downloaded from Amazon RDS ends so).
// ok is false at the end.
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
				if n := len(line); line[n-1] == '\r' {
					line = line[:n-1]
				}
				return line, true, true
			}
			return nil, false, false
		}
		l.fill()
	}
}

// mapped makes the line reader read from the mapping m, from off, before
// reading on from its reader.
func (l *lineReader) mapped(m []byte, off int, poison bool, read func(int64)) {
	l.mp = &fileMap{m: m, poison: poison, read: read}
	l.buf, l.pos, l.inMap = m[off:], 0, true
	l.relAt = chunkSize
}

// release gives back the pages of the mapping before buf[keep], which
// its user no longer refers to, and says how much was read.
func (l *lineReader) release(keep int) {
	mp := l.mp
	l.relAt = l.pos + chunkSize
	if !l.inMap {
		return
	}
	mp.read(int64(l.pos))
	base := len(mp.m) - len(l.buf) // buf[0] in m
	end := (base + keep) &^ (pageSize - 1)
	if end <= mp.released {
		return
	}
	b := mp.m[mp.released:end]
	if mp.poison {
		for i := range b {
			b[i] = 0xff
		}
	} else {
		dropPages(b)
	}
	mp.released = end
}

// pageSize is the unit pages are given back in.
var pageSize = os.Getpagesize()

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
	if l.inMap {
		// The mapping is read to its end: on with the reader, from a
		// chunk. What is left of the mapping stays until the reader is
		// closed.
		l.mp.read(int64(len(l.buf)))
		l.inMap = false
		l.relAt = int(^uint(0) >> 1)
	} else if l.recycle && l.buf != nil {
		l.old = append(l.old, oldChunk{l.buf[:cap(l.buf)], l.seq})
		l.releaseOld()
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

// releaseOld makes the old chunks that keep does not name spare.
func (l *lineReader) releaseOld() {
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
