package capture

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/pgrehearse/pgrehearse/internal/rowdigest"
)

// ErrMaxSize is returned by Writer.Write and Writer.Flush once the capture
// reached WriterOptions.MaxSize: the writer wrote nothing that would cross
// it and accepts no more records. The caller stops recording and closes
// the writer, which marks the capture incomplete.
var ErrMaxSize = errors.New("capture: max size reached")

// ErrExists is returned by Create for a directory that already holds a
// capture: a capture is never appended to or overwritten.
var ErrExists = errors.New("capture: directory already holds a capture")

const (
	defaultFileSize  = 64 << 20
	defaultFrameSize = 256 << 10
	maxFrameSize     = 16 << 20
)

// WriterOptions configures a Writer. The zero value is usable.
type WriterOptions struct {
	// Start is the capture's start, written in every segment's header;
	// records' times are stored relative to it. Zero means now.
	Start time.Time
	// FileSize starts a new segment file once the current one holds
	// this many bytes (compressed); 0 means 64 MiB.
	FileSize int64
	// MaxSize bounds the capture's files in all (compressed bytes,
	// headers included); 0 means unlimited. See ErrMaxSize.
	MaxSize int64
	// FrameSize is how many bytes of encoded records are compressed
	// into one chunk at most; 0 means 256 KiB. Flush writes a shorter
	// chunk; a record larger than FrameSize takes a chunk of its own.
	FrameSize int
	// WrapFile, when set, is given each segment file as it is created
	// and its result is written to instead: tests use it to make writes
	// fail (a full disk) without filling one.
	WrapFile func(name string, f io.Writer) io.Writer
	// StartState, when not nil, is written into the manifest: the
	// upstream's state when the capture started.
	StartState *StartState
}

// EndInfo is what the caller of Writer.Close knows that the writer does
// not.
type EndInfo struct {
	// Stop is when recording stopped; zero means now.
	Stop time.Time
	// Dropped counts the records the caller dropped before they reached
	// the writer.
	Dropped int64
	// Reason says why the capture is incomplete if the writer itself did
	// not fail; empty with Dropped > 0 means ReasonFellBehind.
	Reason Reason
}

// WriterStats are a Writer's counters. They may be read from any
// goroutine while the writer writes.
type WriterStats struct {
	// Records and Sessions count what is in the files (records in a
	// chunk still buffered are not counted yet).
	Records, Sessions int64
	// Bytes is the size of the segment files.
	Bytes int64
	// Lost counts records Write accepted that were never written: the
	// chunk that held them failed or would have crossed MaxSize. A
	// KindGap record is not counted: it stands for records whoever
	// dropped them counted already.
	Lost int64
	// Segments is how many segment files exist.
	Segments int64
}

// Writer writes a capture into a directory of segment files. Each chunk
// of records is compressed as one zstd frame and written with one write,
// so a reader may read the files while they grow. A Writer is not safe
// for concurrent use, except Stats; Recorder gives it one goroutine.
type Writer struct {
	dir   string
	opts  WriterOptions
	start int64 // µs since the Unix epoch

	enc *zstd.Encoder

	raw         []byte // the chunk being filled: encoded records
	rawRecords  int64
	rawGaps     int64 // KindGap records stand for records counted already
	rawSessions int64
	// rawResumed and rawSkipped count the startups of sessions recorded
	// from the middle in the chunk, and the messages they skipped by
	// reason; resumed and skipped what the files hold (Close's goroutine
	// only).
	rawResumed int64
	rawSkipped SkippedByReason
	resumed    int64
	skipped    SkippedByReason
	prev       int64  // time of the last record in raw, or start
	out        []byte // the chunk compressed, after its header

	seq       uint32
	f         *os.File
	fw        io.Writer // f, or what WrapFile made of it
	fileBytes int64

	records, sessions, bytes, lost, segments atomic.Int64

	err    error // sticky: the failure that stopped the writer
	reason Reason
	closed bool
}

// Create starts a capture in dir, creating dir (0700) if it is missing,
// and writes the first segment's header. A dir that already holds a
// capture's segment or manifest is refused with ErrExists.
func Create(dir string, opts WriterOptions) (*Writer, error) {
	if opts.Start.IsZero() {
		opts.Start = time.Now()
	}
	if opts.FileSize <= 0 {
		opts.FileSize = defaultFileSize
	}
	if opts.FrameSize <= 0 {
		opts.FrameSize = defaultFrameSize
	}
	opts.FrameSize = min(opts.FrameSize, maxFrameSize)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	for _, e := range ents {
		if _, ok := parseSegmentName(e.Name()); ok || e.Name() == ManifestName {
			return nil, fmt.Errorf("%w: %s has %s; choose an empty directory", ErrExists, dir, e.Name())
		}
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(true))
	if err != nil {
		return nil, err
	}
	w := &Writer{
		dir:   dir,
		opts:  opts,
		start: opts.Start.UnixMicro(),
		enc:   enc,
		raw:   make([]byte, 0, opts.FrameSize),
	}
	w.prev = w.start
	if err := w.openSegment(); err != nil {
		// A file another Create made first surfaces as ErrExists too.
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("%w: %s", ErrExists, dir)
		}
		return nil, err
	}
	if err := reserve(dir); err != nil {
		w.closeSegment()
		return nil, fmt.Errorf("capture: no room for a capture in %s: %w", dir, err)
	}
	return w, nil
}

// reserveName is a file of reserveSize bytes that Create writes and Close
// removes just before it writes the manifest, so that a capture that
// filled its disk can still be finalized: its manifest then says why it
// stopped instead of leaving the capture unfinalized.
const (
	reserveName = ".reserve"
	reserveSize = 64 << 10
)

func reserve(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, reserveName), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	// Written, not truncated to size: a sparse file would hold no room.
	_, err = f.Write(make([]byte, reserveSize))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// Dir is the capture's directory.
func (w *Writer) Dir() string { return w.dir }

// Stats returns the writer's counters; safe from any goroutine.
func (w *Writer) Stats() WriterStats {
	return WriterStats{
		Records:  w.records.Load(),
		Sessions: w.sessions.Load(),
		Bytes:    w.bytes.Load(),
		Lost:     w.lost.Load(),
		Segments: w.segments.Load(),
	}
}

// Write adds r to the chunk being filled and writes the chunk once it
// reaches FrameSize. An error means r is not in the capture and the
// caller counts it as dropped; records accepted earlier that the failure
// lost are counted in Stats().Lost. After a failure (ErrMaxSize, a write
// error) every Write returns that error and the writer takes nothing
// more. A record over the format's limits returns ErrRecordTooLarge and
// leaves the writer usable. Write does not keep r or its slices.
func (w *Writer) Write(r *Record) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("capture: write after Close")
	}
	size := recordSize(r, w.prev)
	if size > maxRecordSize {
		return ErrRecordTooLarge
	}
	if len(w.raw) > 0 && len(w.raw)+rowdigest.UvarintLen(uint64(size))+size > w.opts.FrameSize {
		if err := w.Flush(); err != nil {
			return err
		}
	}
	raw, err := appendRecord(w.raw, r, w.prev)
	if err != nil {
		return err
	}
	w.raw = raw
	w.prev = r.Time
	w.rawRecords++
	switch r.Kind {
	case KindStartup:
		w.rawSessions++
		if rs := r.Resume; rs != nil {
			w.rawResumed++
			if rs.Skipped > 0 {
				w.rawSkipped.Add(rs.SkipReason, rs.Skipped)
			}
		}
	case KindGap:
		w.rawGaps++
	}
	if len(w.raw) >= w.opts.FrameSize {
		if err := w.Flush(); err != nil {
			// r was not written: it is the caller's to count, like
			// every record Write refuses, not the writer's Lost.
			if r.Kind != KindGap {
				w.lost.Add(-1)
			}
			return err
		}
	}
	return nil
}

// Flush compresses the records buffered so far into one chunk and writes
// it, so a reader sees them; Recorder calls it every 100 ms or so while
// records arrive. It does not sync the file.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if len(w.raw) == 0 {
		return nil
	}
	w.out = w.enc.EncodeAll(w.raw, append(w.out[:0], make([]byte, chunkHeaderSize)...))
	chunkHeader{compressed: uint32(len(w.out) - chunkHeaderSize), raw: uint32(len(w.raw))}.put(w.out)
	n := int64(len(w.out))
	if w.f == nil {
		n += headerSize
	}
	if w.opts.MaxSize > 0 && w.bytes.Load()+n > w.opts.MaxSize {
		w.dropChunk()
		return w.fail(ErrMaxSize, ReasonMaxSize)
	}
	if w.f == nil {
		if err := w.openSegment(); err != nil {
			w.dropChunk()
			return w.err
		}
	}
	if _, err := w.fw.Write(w.out); err != nil {
		// Take back what part of the chunk got written, so the file
		// ends at a chunk's end; if that fails too, readers treat the
		// torn chunk as the capture's tail.
		_ = w.f.Truncate(w.fileBytes)
		w.dropChunk()
		return w.fail(fmt.Errorf("capture: writing %s: %w", w.f.Name(), err), "")
	}
	w.fileBytes += int64(len(w.out))
	w.bytes.Add(int64(len(w.out)))
	w.records.Add(w.rawRecords)
	w.sessions.Add(w.rawSessions)
	w.resumed += w.rawResumed
	w.skipped.InTransaction += w.rawSkipped.InTransaction
	w.skipped.InFlight += w.rawSkipped.InFlight
	w.resetChunk()
	if w.fileBytes >= w.opts.FileSize {
		// The next segment is created only when there is a chunk for
		// it, so a capture never ends with an empty segment.
		if err := w.closeSegment(); err != nil {
			return w.fail(fmt.Errorf("capture: closing %s: %w", filepath.Join(w.dir, segmentName(w.seq)), err), "")
		}
	}
	return nil
}

func (w *Writer) resetChunk() {
	w.raw = w.raw[:0]
	w.rawRecords, w.rawGaps, w.rawSessions, w.rawResumed = 0, 0, 0, 0
	w.rawSkipped = SkippedByReason{}
	w.prev = w.start
}

func (w *Writer) dropChunk() {
	w.lost.Add(w.rawRecords - w.rawGaps)
	w.resetChunk()
}

// fail stops the writer for good; reason "" derives it from err.
func (w *Writer) fail(err error, reason Reason) error {
	if w.err != nil {
		return w.err
	}
	if reason == "" {
		reason = ReasonWriteError
		if errors.Is(err, syscall.ENOSPC) {
			reason = ReasonDiskFull
		}
	}
	w.err, w.reason = err, reason
	return err
}

// openSegment creates the next segment file, 0600 and never over an
// existing one, and writes its header. A reader takes the existence of
// segment n+1 to mean segment n is whole, so segment n is closed first.
func (w *Writer) openSegment() error {
	w.seq++
	name := filepath.Join(w.dir, segmentName(w.seq))
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return w.fail(fmt.Errorf("capture: %w", err), "")
	}
	// The umask may only remove bits from 0600, but a directory's
	// default ACL can add some: say 0600 once more.
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return w.fail(fmt.Errorf("capture: %w", err), "")
	}
	w.f, w.fw, w.fileBytes = f, io.Writer(f), 0
	if w.opts.WrapFile != nil {
		w.fw = w.opts.WrapFile(name, f)
	}
	w.segments.Add(1)
	hdr := header{version: Version, seq: w.seq, start: w.start}.append(make([]byte, 0, headerSize))
	if _, err := w.fw.Write(hdr); err != nil {
		_ = f.Truncate(0)
		return w.fail(fmt.Errorf("capture: writing %s: %w", name, err), "")
	}
	w.fileBytes = headerSize
	w.bytes.Add(headerSize)
	return nil
}

func (w *Writer) closeSegment() error {
	if w.f == nil {
		return nil
	}
	err := w.f.Sync()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.f, w.fw = nil, nil
	return err
}

// Close writes what is buffered, closes the last segment and writes the
// manifest (capture.json, 0600) atomically. The manifest says the capture
// is complete only when the writer never failed and nothing was dropped.
// Close returns an error when the capture could not be finalized; a
// failure Write already returned is recorded in the manifest, not
// returned again.
func (w *Writer) Close(end EndInfo) error {
	if w.closed {
		return errors.New("capture: Close called twice")
	}
	w.closed = true
	defer w.enc.Close()
	var errs []error
	if w.err == nil {
		if err := w.Flush(); err != nil {
			errs = append(errs, err)
		}
	} else {
		w.dropChunk()
	}
	if w.f != nil {
		name := w.f.Name()
		if err := w.closeSegment(); err != nil && w.err == nil {
			err = fmt.Errorf("capture: closing %s: %w", name, err)
			errs = append(errs, w.fail(err, ""))
		}
	}
	if end.Stop.IsZero() {
		end.Stop = time.Now()
	}
	st := w.Stats()
	m := &Manifest{
		Format:   manifestFormat,
		Version:  Version,
		Start:    time.UnixMicro(w.start).UTC(),
		Stop:     end.Stop.UTC(),
		Segments: int(st.Segments),
		Sessions: st.Sessions,
		Records:  st.Records,
		Bytes:    st.Bytes,
		Dropped:  end.Dropped + st.Lost,

		StartState: w.opts.StartState,

		SessionsResumed:        w.resumed,
		SkippedBeforeRecording: w.skipped,
	}
	switch {
	case w.err != nil:
		m.Reason = w.reason
		if w.reason != ReasonMaxSize {
			m.Error = w.err.Error()
		}
	case end.Reason != "":
		m.Reason = end.Reason
	case m.Dropped > 0:
		m.Reason = ReasonFellBehind
	}
	m.Complete = m.Reason == ""
	// The room kept for the manifest (see reserve).
	if err := os.Remove(filepath.Join(w.dir, reserveName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("capture: %w", err))
	}
	if err := writeManifest(w.dir, m); err != nil {
		errs = append(errs, fmt.Errorf("capture: writing the manifest: %w", err))
	}
	return errors.Join(errs...)
}
