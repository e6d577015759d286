package capture

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// A capture whose writer never closed it (the proxy was killed) reads
// whole up to its last complete chunk and says it is not finalized.
func TestReaderUnfinalized(t *testing.T) {
	cases := []struct {
		name    string
		cut     int64 // bytes cut off the last segment
		partial bool
	}{
		{"whole chunks", 0, false},
		{"torn last chunk", 5, true},
		{"only a chunk header's first bytes", -5, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			recs := sessions(20)
			w, err := Create(dir, WriterOptions{Start: t0})
			if err != nil {
				t.Fatal(err)
			}
			for i := range recs[:100] {
				w.Write(&recs[i])
			}
			w.Flush()
			keep := w.Stats().Bytes
			for i := range recs[100:] {
				w.Write(&recs[100+i])
			}
			w.Flush()
			// Abandoned: no Close, as if the process died.
			seg := filepath.Join(dir, "capture-000001.pgcap")
			size := w.Stats().Bytes
			switch {
			case c.cut > 0:
				size -= c.cut
			case c.cut < 0:
				size = keep - c.cut
			}
			if err := os.Truncate(seg, size); err != nil {
				t.Fatal(err)
			}
			got, r, err := readAll(t, dir)
			if err != nil {
				t.Fatal(err)
			}
			want := recs
			if c.cut != 0 {
				want = recs[:100]
			}
			checkRecords(t, got, want)
			info := r.Info()
			if info.Finalized || info.Complete || info.Reason != ReasonNotFinalized || !info.Start.Equal(t0) {
				t.Errorf("Info() = %+v, want not finalized, start %v", info, t0)
			}
			if r.Partial() != c.partial || info.Partial != c.partial {
				t.Errorf("Partial() = %v, want %v", r.Partial(), c.partial)
			}
		})
	}
}

// Damage in the middle of a capture is an error that names the file and
// the offset of the chunk; a short file is not damage only where a writer
// may have stopped mid-write.
func TestReaderCorruption(t *testing.T) {
	type layout struct {
		dir      string
		segments []string
		chunks   []int64 // offsets of the first segment's chunks
	}
	build := func(t *testing.T) layout {
		dir := t.TempDir()
		var recs []Record
		for i := range 600 {
			recs = append(recs, Record{Kind: KindFrontend, Session: uint64(i%5 + 1), Time: t0.UnixMicro() + int64(i), Msg: []byte(fmt.Sprintf("Q\x00\x00\x00\x20SELECT %x\x00", i*104729))})
		}
		writeCapture(t, dir, WriterOptions{FrameSize: 1 << 10, FileSize: 1 << 10}, recs, EndInfo{})
		l := layout{dir: dir}
		seqs, _ := segments(dir)
		for _, s := range seqs {
			l.segments = append(l.segments, filepath.Join(dir, segmentName(s)))
		}
		b, _ := os.ReadFile(l.segments[0])
		for off := int64(headerSize); off < int64(len(b)); {
			l.chunks = append(l.chunks, off)
			c, _ := parseChunkHeader(b[off:])
			off += chunkHeaderSize + int64(c.compressed)
		}
		if len(l.segments) < 2 || len(l.chunks) < 3 {
			t.Fatalf("%d segments, %d chunks: too few for the test", len(l.segments), len(l.chunks))
		}
		return l
	}
	flip := func(path string, off int64) {
		b, _ := os.ReadFile(path)
		b[off] ^= 0x40
		os.WriteFile(path, b, 0o600)
	}
	cases := []struct {
		name    string
		damage  func(l layout) (file string, off int64)
		message string
	}{
		{"chunk header", func(l layout) (string, int64) {
			flip(l.segments[0], l.chunks[1]+2)
			return l.segments[0], l.chunks[1]
		}, "bad chunk header checksum"},
		{"compressed bytes", func(l layout) (string, int64) {
			flip(l.segments[0], l.chunks[1]+chunkHeaderSize+20)
			return l.segments[0], l.chunks[1]
		}, "zstd"},
		{"segment cut short before the next", func(l layout) (string, int64) {
			st, _ := os.Stat(l.segments[0])
			os.Truncate(l.segments[0], st.Size()-3)
			last := l.chunks[len(l.chunks)-1]
			return l.segments[0], last
		}, "ends inside a chunk"},
		{"last segment cut short in a complete capture", func(l layout) (string, int64) {
			last := l.segments[len(l.segments)-1]
			st, _ := os.Stat(last)
			os.Truncate(last, st.Size()-3)
			return last, -1
		}, "ends inside a chunk"},
		{"newer version", func(l layout) (string, int64) {
			b, _ := os.ReadFile(l.segments[1])
			b[6] = Version + 1
			os.WriteFile(l.segments[1], b, 0o600)
			return l.segments[1], 0
		}, fmt.Sprintf("format version %d", Version+1)},
		{"segment out of place", func(l layout) (string, int64) {
			b, _ := os.ReadFile(l.segments[1])
			b[8] = 9
			os.WriteFile(l.segments[1], b, 0o600)
			return l.segments[1], 0
		}, "says segment 9"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := build(t)
			file, off := c.damage(l)
			_, _, err := readAll(t, l.dir)
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a *CorruptError", err)
			}
			if ce.File != file || (off >= 0 && ce.Offset != off) || !strings.Contains(ce.Error(), c.message) {
				t.Errorf("err = %v; want file %s, offset %d, %q", err, file, off, c.message)
			}
		})
	}
	t.Run("missing segment", func(t *testing.T) {
		l := build(t)
		os.Remove(l.segments[1])
		if _, err := Open(l.dir); err == nil || !strings.Contains(err.Error(), "capture-000002.pgcap is missing") {
			t.Errorf("Open: %v", err)
		}
	})
}

func TestDetect(t *testing.T) {
	dir := t.TempDir()
	capDir := filepath.Join(dir, "cap")
	writeCapture(t, capDir, WriterOptions{}, sessions(1), EndInfo{})
	os.WriteFile(filepath.Join(dir, "postgresql.log"), []byte("2026-11-25 06:30:00 UTC [42] LOG:  statement: SELECT 1\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "short"), []byte("PGR"), 0o600)
	os.Mkdir(filepath.Join(dir, "empty"), 0o700)
	cases := []struct {
		path string
		want bool
	}{
		{capDir, true},
		{filepath.Join(capDir, "capture-000001.pgcap"), true},
		{filepath.Join(dir, "postgresql.log"), false},
		{filepath.Join(dir, "short"), false},
		{filepath.Join(dir, "empty"), false},
	}
	for _, c := range cases {
		got, err := Detect(c.path)
		if err != nil || got != c.want {
			t.Errorf("Detect(%s) = %v, %v; want %v", filepath.Base(c.path), got, err, c.want)
		}
	}
	if _, err := Detect(filepath.Join(dir, "absent")); err == nil {
		t.Error("Detect of a missing path: no error")
	}
}

// A single segment file reads alone, without its directory's manifest.
func TestReaderSegmentFile(t *testing.T) {
	dir := t.TempDir()
	recs := sessions(4)
	writeCapture(t, dir, WriterOptions{}, recs, EndInfo{})
	got, r, err := readAll(t, filepath.Join(dir, "capture-000001.pgcap"))
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, got, recs)
	if r.Info().Finalized {
		t.Error("a segment read alone says finalized")
	}
}

// A reader polling a capture while a writer writes it sees every record
// once, in order, and finally the manifest. It polls: nothing tells it
// when the writer wrote.
func TestReadWhileWriting(t *testing.T) {
	dir := t.TempDir()
	const n = 20000
	want := make([]Record, n)
	for i := range want {
		want[i] = Record{Kind: KindFrontend, Session: uint64(i%13 + 1), Time: t0.UnixMicro() + int64(i), Msg: []byte(fmt.Sprintf("Q\x00\x00\x00\x20SELECT %x\x00", i*7919))}
	}
	w, err := Create(dir, WriterOptions{Start: t0, FrameSize: 2 << 10, FileSize: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	werr := make(chan error, 1)
	go func() {
		for i := range want {
			if err := w.Write(&want[i]); err != nil {
				werr <- err
				return
			}
			if i%97 == 0 {
				if err := w.Flush(); err != nil {
					werr <- err
					return
				}
			}
		}
		werr <- w.Close(EndInfo{})
	}()
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []*Record
	var eofs int
	deadline := time.Now().Add(time.Minute)
	for !r.Info().Finalized || len(got) < n {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			eofs++
			if time.Now().After(deadline) {
				t.Fatalf("read %d of %d records in a minute", len(got), n)
			}
			runtime.Gosched()
			continue
		}
		if err != nil {
			t.Fatalf("after %d records: %v", len(got), err)
		}
		got = append(got, rec)
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("after the last record: %v", err)
	}
	checkRecords(t, got, want)
	if r.Partial() {
		t.Error("partial after the writer closed")
	}
	if segs := r.Info().Segments; segs < 3 {
		t.Errorf("%d segments, want several", segs)
	}
	t.Logf("%d polls found nothing new", eofs)
}
