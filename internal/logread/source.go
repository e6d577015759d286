package logread

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// source is a log file opened for reading, decompressed when it needs to
// be, with a count of the raw bytes read for progress reporting.
type source struct {
	r      io.Reader // decompressed bytes
	closer []io.Closer
	raw    *countingReader
	size   int64
	// compressed files cannot be split into parts read at once; codec
	// names their compression.
	compressed bool
	codec      compression
	mtime      time.Time // when the file was last written; zero for stdin
	damage     *damageReader
	// file and off are the regular file the source reads, and where its
	// region (size bytes) starts, for a reader that maps it into memory;
	// file is nil for anything else. whole is set when the region is the
	// whole file, which may grow past size while it is read.
	file  *os.File
	off   int64
	whole bool
}

// damaged returns the error that cut a compressed stream short, or nil.
func (s *source) damaged() error {
	if s.damage == nil {
		return nil
	}
	return s.damage.err
}

// modTime returns when the file was last written, or now for a stream.
func (s *source) modTime() time.Time {
	if s.mtime.IsZero() {
		return time.Now()
	}
	return s.mtime
}

type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// compression names what a file is compressed with.
type compression string

const (
	compressNone  compression = ""
	compressGzip  compression = "gzip"
	compressZstd  compression = "zstd"
	compressBzip2 compression = "bzip2"
	compressXz    compression = "xz"
)

// magic byte sequences, checked before the file extension: a rotated log
// named .1 may well be gzip, and a .gz may have been decompressed in place.
var magics = []struct {
	prefix []byte
	c      compression
}{
	{[]byte{0x1f, 0x8b}, compressGzip},
	{[]byte{0x28, 0xb5, 0x2f, 0xfd}, compressZstd},
	{[]byte("BZh"), compressBzip2},
	{[]byte{0xfd, '7', 'z', 'X', 'Z', 0x00}, compressXz},
}

func sniffCompression(head []byte, name string) compression {
	for _, m := range magics {
		if bytes.HasPrefix(head, m.prefix) {
			return m.c
		}
	}
	// Too short to hold a magic: trust the extension, so that a truncated
	// compressed file fails with a decompression error, not as garbage.
	if len(head) < 6 {
		switch {
		case strings.HasSuffix(name, ".gz"):
			return compressGzip
		case strings.HasSuffix(name, ".zst"):
			return compressZstd
		case strings.HasSuffix(name, ".bz2"):
			return compressBzip2
		case strings.HasSuffix(name, ".xz"):
			return compressXz
		}
	}
	return compressNone
}

// openSource opens path ("-" is stdin) and wraps it in a decompressor when
// its first bytes say it is compressed.
func openSource(path string, stdin io.Reader) (*source, error) {
	s := &source{size: -1}
	var f io.Reader
	if path == "-" {
		if stdin == nil {
			stdin = os.Stdin
		}
		f = stdin
	} else {
		file, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		if fi, err := file.Stat(); err == nil && fi.Mode().IsRegular() {
			s.size = fi.Size()
			s.mtime = fi.ModTime()
			s.file, s.whole = file, true
		}
		s.closer = append(s.closer, file)
		f = file
	}
	s.raw = &countingReader{r: f}
	br := bufio.NewReaderSize(s.raw, 64<<10)
	head, _ := br.Peek(6)
	var err error
	c := sniffCompression(head, path)
	s.compressed, s.codec = c != compressNone, c
	switch c {
	case compressNone:
		s.r = br
	case compressGzip:
		var z *gzip.Reader
		if z, err = gzip.NewReader(br); err == nil {
			s.r = z
		}
	case compressZstd:
		var z *zstd.Decoder
		if z, err = zstd.NewReader(br, zstd.WithDecoderConcurrency(1)); err == nil {
			s.r = z
			s.closer = append(s.closer, closerFunc(func() error { z.Close(); return nil }))
		}
	case compressBzip2:
		s.r = bzip2.NewReader(br)
	case compressXz:
		var z *xz.Reader
		if z, err = xz.NewReader(br); err == nil {
			s.r = z
		}
	}
	if err != nil {
		s.close()
		return nil, fmt.Errorf("%s: not a valid compressed file: %w", path, err)
	}
	if s.compressed {
		s.damage = &damageReader{r: s.r, src: s}
		s.r = s.damage
	}
	return s, nil
}

// damageReader ends a compressed stream at the first error of its
// decompressor (a file cut short while it was copied, a damaged block):
// what was decompressed before is read, and the error is kept to mark the
// result partial, with where it happened.
type damageReader struct {
	r   io.Reader
	src *source
	err error
	out int64 // decompressed bytes given out
}

func (d *damageReader) Read(p []byte) (int, error) {
	if d.err != nil {
		return 0, io.EOF
	}
	n, err := d.r.Read(p)
	d.out += int64(n)
	if err != nil && err != io.EOF {
		read, size := d.src.progress()
		where := fmt.Sprintf("after %d bytes of the compressed file", read)
		if size >= 0 {
			where = fmt.Sprintf("after %d of its %d bytes", read, size)
		}
		d.err = fmt.Errorf("the compressed data ends or breaks %s (%d bytes decompressed): %w", where, d.out, err)
		return n, io.EOF
	}
	return n, err
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

func (s *source) progress() (int64, int64) { return s.raw.n.Load(), s.size }

// readTo counts n bytes of the region read when more were not counted
// already: a reader that maps the file reads around the counting reader.
func (s *source) readTo(n int64) {
	for {
		old := s.raw.n.Load()
		if n <= old || s.raw.n.CompareAndSwap(old, n) {
			return
		}
	}
}

func (s *source) close() error {
	var first error
	for i := len(s.closer) - 1; i >= 0; i-- {
		if err := s.closer[i].Close(); err != nil && first == nil {
			first = err
		}
	}
	s.closer = nil
	return first
}
