package capture

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/klauspost/compress/zstd"
)

// CorruptError says where a capture is damaged: the file and the byte
// offset of the chunk (or header) that cannot be read.
type CorruptError struct {
	File   string
	Offset int64
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("capture: %s is corrupt at offset %d: %s", e.File, e.Offset, e.Reason)
}

// Info is what a reader knows of a capture as a whole.
type Info struct {
	// Manifest is capture.json when Finalized; otherwise it holds
	// only Start (from the segments' header), Complete false and
	// Reason ReasonNotFinalized.
	Manifest
	// Finalized: the capture has a manifest, so its writer closed it.
	// A reader opened on one segment file never reads a manifest.
	Finalized bool
	// Partial: the reader stopped at a chunk not wholly written, the
	// end of a capture that is still being written or whose writer
	// stopped mid-write. Not an error.
	Partial bool
}

// Reader reads a capture's records in the order they were written,
// across segments. It may read a capture while it is being written: Next
// returns io.EOF at the end of what is written so far, and a later Next
// returns what was written since. A Reader is not safe for concurrent
// use.
type Reader struct {
	dir   string   // "" when opened on a single segment file
	files []string // the segments known so far, in order
	sizes []int64  // their sizes when last looked at
	cur   int
	f     *os.File
	hdrOK bool  // the current segment's header is read
	off   int64 // the next chunk's offset in the current segment
	start int64 // the capture's start, µs

	manifest *Manifest
	partial  bool
	err      error // sticky

	dec      *zstd.Decoder
	maxChunk uint32 // largest raw chunk accepted
	comp     []byte
	raw      []byte
	chunk    decoder
	chunkOff int64

	counts [len(kindNames)]int64
}

// Open opens a capture directory, or one segment file of a capture, and
// reads the first segment's header.
func Open(path string) (*Reader, error) {
	return open(path, maxChunkSize)
}

func open(path string, maxChunk uint32) (*Reader, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	r := &Reader{maxChunk: maxChunk}
	if r.files, err = Segments(path); err != nil {
		return nil, err
	}
	if st.IsDir() {
		r.dir = path
		r.manifest, err = readManifest(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	r.sizes = make([]int64, len(r.files))
	for i, name := range r.files {
		if st, err := os.Stat(name); err == nil {
			r.sizes[i] = st.Size()
		}
	}
	r.dec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(uint64(maxChunk)), zstd.WithDecodeAllCapLimit(true))
	if err != nil {
		return nil, err
	}
	if r.f, err = os.Open(r.files[0]); err != nil {
		r.dec.Close()
		return nil, fmt.Errorf("capture: %w", err)
	}
	if st, err := r.readHeader(); st != stGot {
		r.Close()
		if err == nil {
			err = &CorruptError{File: r.files[0], Reason: "the header is incomplete"}
		}
		return nil, err
	}
	return r, nil
}

// segments lists the sequence numbers of dir's segment files, sorted.
func segments(dir string) ([]uint32, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	var seqs []uint32
	for _, e := range ents {
		if s, ok := parseSegmentName(e.Name()); ok && e.Type().IsRegular() {
			seqs = append(seqs, s)
		}
	}
	slices.Sort(seqs)
	return seqs, nil
}

// Segments lists the segment files of the capture at path, in order: a
// directory's (each from the first must be there), or path itself when it
// names one segment file. The manifest is not among them: it is written
// last, when the capture is closed.
func Segments(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	seqs, err := segments(path)
	if err != nil {
		return nil, err
	}
	if len(seqs) == 0 {
		return nil, fmt.Errorf("capture: %s holds no capture segment (%s)", path, segmentName(1))
	}
	files := make([]string, len(seqs))
	for i, s := range seqs {
		if s != uint32(i+1) {
			return nil, fmt.Errorf("capture: %s: %s is missing", path, segmentName(uint32(i+1)))
		}
		files[i] = filepath.Join(path, segmentName(s))
	}
	return files, nil
}

// Detect says whether path is a capture: a directory holding segment
// files, or a file that starts with the magic. It reads at most the
// directory's names or the file's first bytes.
func Detect(path string) (bool, error) {
	st, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	if st.IsDir() {
		seqs, err := segments(path)
		return len(seqs) > 0, err
	}
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	b := make([]byte, len(Magic))
	if _, err := io.ReadFull(f, b); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return false, nil
		}
		return false, err
	}
	return string(b) == Magic, nil
}

// Close releases the open file.
func (r *Reader) Close() error {
	r.dec.Close()
	if r.f != nil {
		err := r.f.Close()
		r.f = nil
		return err
	}
	return nil
}

// Next returns the next record, a fresh one each call that the caller
// may keep, or io.EOF at the end of what is written. After an error other
// than io.EOF, Next returns that error again.
func (r *Reader) Next() (*Record, error) {
	if r.err != nil {
		return nil, r.err
	}
	for {
		if r.chunk.off < len(r.chunk.b) {
			rec := new(Record)
			if err := r.chunk.next(rec); err != nil {
				r.err = &CorruptError{File: r.files[r.cur], Offset: r.chunkOff, Reason: err.Error()}
				return nil, r.err
			}
			r.counts[rec.Kind]++
			return rec, nil
		}
		if cap(r.raw) > 4*maxFrameSize {
			r.raw = nil // one huge record is no reason to keep its buffer
		}
		ok, err := r.nextChunk()
		if err != nil {
			r.err = err
			return nil, err
		}
		if !ok {
			return nil, io.EOF
		}
	}
}

// Partial says whether the last io.EOF came at a chunk not wholly
// written: a capture still being written, or whose writer stopped
// mid-write.
func (r *Reader) Partial() bool { return r.partial }

// Info returns what is known of the capture: its manifest if it has one.
// A Reader reading a capture while it is written finds the manifest once
// Next reached the end after the writer closed it.
func (r *Reader) Info() Info {
	if r.manifest != nil {
		return Info{Manifest: *r.manifest, Finalized: true, Partial: r.partial}
	}
	return Info{
		Manifest: Manifest{
			Format:  manifestFormat,
			Version: Version,
			Start:   time.UnixMicro(r.start).UTC(),
			Reason:  ReasonNotFinalized,
		},
		Partial: r.partial,
	}
}

// Counts returns how many records of each kind Next returned.
func (r *Reader) Counts() map[Kind]int64 {
	m := make(map[Kind]int64)
	for k, n := range r.counts {
		if n > 0 {
			m[Kind(k)] = n
		}
	}
	return m
}

// Progress returns how many compressed bytes the reader has consumed and
// the size of the capture's files as last seen (it grows while the
// capture is written).
func (r *Reader) Progress() (read, size int64) {
	for i, s := range r.sizes {
		if i < r.cur {
			read += s
		}
		size += s
	}
	read += r.off
	return read, max(size, read)
}

type state int

const (
	stGot    state = iota // a chunk (or the header) was read
	stNone                // nothing more in the file, for now
	stShort               // some bytes, but not a whole chunk
	stFailed              // the error says why
)

// nextChunk reads the next chunk, moving to the next segment when the
// current one is done. It returns false, nil at the end of what is
// written so far.
func (r *Reader) nextChunk() (bool, error) {
	for {
		st, err := r.readChunk()
		if st == stGot || st == stFailed {
			return st == stGot, err
		}
		if !r.segmentDone() {
			// The writer may still be writing this segment.
			r.partial = st == stShort
			return false, nil
		}
		// The segment was done when we looked; what it held before we
		// looked may have been written since we read it.
		if st, err = r.readChunk(); st == stGot || st == stFailed {
			return st == stGot, err
		}
		last := r.cur == len(r.files)-1
		if st == stShort {
			// A torn chunk ends a capture whose writer failed; in a
			// complete capture, or before another segment, the file
			// was damaged since.
			if last && (r.manifest == nil || !r.manifest.Complete) {
				r.partial = true
				return false, nil
			}
			return false, &CorruptError{File: r.files[r.cur], Offset: r.off, Reason: "the file ends inside a chunk"}
		}
		r.partial = false
		if last {
			return false, nil
		}
		if err := r.f.Close(); err != nil {
			return false, err
		}
		r.cur++
		r.off, r.hdrOK = 0, false
		if r.f, err = os.Open(r.files[r.cur]); err != nil {
			return false, fmt.Errorf("capture: %w", err)
		}
	}
}

// segmentDone says whether the current segment is whole: a later segment
// exists, or the capture has a manifest. A writer closes a segment before
// it creates the next one and writes the manifest last. A single segment
// opened alone is never known to be done.
func (r *Reader) segmentDone() bool {
	if r.cur < len(r.files)-1 {
		return true
	}
	if r.dir == "" {
		return false
	}
	next := filepath.Join(r.dir, segmentName(uint32(len(r.files)+1)))
	if st, err := os.Stat(next); err == nil {
		r.files = append(r.files, next)
		r.sizes = append(r.sizes, st.Size())
		return true
	}
	if r.manifest == nil {
		if m, err := readManifest(r.dir); err == nil {
			r.manifest = m
		}
	}
	return r.manifest != nil
}

func (r *Reader) corrupt(off int64, format string, args ...any) error {
	return &CorruptError{File: r.files[r.cur], Offset: off, Reason: fmt.Sprintf(format, args...)}
}

// readAt reads len(b) bytes at off, telling a short file from an error.
func (r *Reader) readAt(b []byte, off int64) (state, error) {
	n, err := r.f.ReadAt(b, off)
	switch {
	case n == len(b):
		return stGot, nil
	case err != nil && !errors.Is(err, io.EOF):
		return stFailed, fmt.Errorf("capture: %w", err)
	case n == 0:
		return stNone, nil
	}
	return stShort, nil
}

func (r *Reader) readHeader() (state, error) {
	var b [headerSize]byte
	st, err := r.readAt(b[:], 0)
	if st != stGot {
		return st, err
	}
	h, err := parseHeader(b[:])
	if err != nil {
		return stFailed, r.corrupt(0, "%v", err)
	}
	if r.dir != "" && h.seq != uint32(r.cur+1) {
		return stFailed, r.corrupt(0, "the header says segment %d", h.seq)
	}
	if r.cur == 0 {
		r.start = h.start
	} else if h.start != r.start {
		return stFailed, r.corrupt(0, "the header's start time differs from the first segment's")
	}
	r.hdrOK, r.off = true, headerSize
	return stGot, nil
}

func (r *Reader) readChunk() (state, error) {
	if !r.hdrOK {
		if st, err := r.readHeader(); st != stGot {
			return st, err
		}
	}
	var hb [chunkHeaderSize]byte
	if st, err := r.readAt(hb[:], r.off); st != stGot {
		return st, err
	}
	c, ok := parseChunkHeader(hb[:])
	if !ok {
		return stFailed, r.corrupt(r.off, "bad chunk header checksum")
	}
	if c.raw == 0 || c.raw > r.maxChunk || c.compressed == 0 || c.compressed > r.maxChunk {
		return stFailed, r.corrupt(r.off, "chunk of %d bytes (%d compressed) is out of bounds", c.raw, c.compressed)
	}
	// Allocate only for bytes the file holds: a length the file
	// cannot back is a chunk still being written (or torn).
	fst, err := r.f.Stat()
	if err != nil {
		return stFailed, fmt.Errorf("capture: %w", err)
	}
	r.sizes[r.cur] = fst.Size()
	end := r.off + chunkHeaderSize + int64(c.compressed)
	if fst.Size() < end {
		return stShort, nil
	}
	if cap(r.comp) < int(c.compressed) {
		r.comp = make([]byte, c.compressed)
	}
	comp := r.comp[:c.compressed]
	if st, err := r.readAt(comp, r.off+chunkHeaderSize); st != stGot {
		if st == stNone {
			st = stShort // the file shrank since Stat
		}
		return st, err
	}
	if cap(r.raw) < int(c.raw) {
		r.raw = make([]byte, 0, c.raw)
	}
	raw, err := r.dec.DecodeAll(comp, r.raw[:0:c.raw])
	if err != nil {
		return stFailed, r.corrupt(r.off, "zstd: %v", err)
	}
	if len(raw) != int(c.raw) {
		return stFailed, r.corrupt(r.off, "chunk decompresses to %d bytes, its header says %d", len(raw), c.raw)
	}
	r.chunk = decoder{b: raw, prev: r.start}
	r.chunkOff = r.off
	r.off = end
	return stGot, nil
}
