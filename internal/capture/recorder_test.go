package capture

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// stalledWriter creates a capture in dir, of frames of frameSize, whose
// writes after Create wait until release is closed.
func stalledWriter(t *testing.T, dir string, frameSize int) (w *Writer, release chan struct{}) {
	t.Helper()
	release = make(chan struct{})
	var stall atomic.Bool
	w, err := Create(dir, WriterOptions{Start: t0, FrameSize: frameSize, WrapFile: func(_ string, f io.Writer) io.Writer {
		return writerFunc(func(b []byte) (int, error) {
			if stall.Load() {
				<-release
			}
			return f.Write(b)
		})
	}})
	if err != nil {
		t.Fatal(err)
	}
	stall.Store(true)
	return w, release
}

// A recorder whose disk stalls drops what its queue cannot hold, counts it
// per session, and writes a KindGap where each session lost records: every
// record added is either written or counted as dropped.
func TestRecorderDropAccounting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		w, release := stalledWriter(t, dir, 512)
		const queue = 64
		rc := NewRecorder(w, RecorderOptions{Queue: queue})

		type sent struct {
			r  Record
			ok bool
		}
		var all []sent
		add := func(n int) {
			for range n {
				i := len(all)
				r := Record{Kind: KindFrontend, Session: uint64(i%5 + 1), Time: t0.UnixMicro() + int64(i), Msg: bind()}
				all = append(all, sent{r, rc.Add(r)})
			}
		}
		add(20)
		synctest.Wait() // the writing goroutine is stuck in its first chunk
		add(500)
		time.Sleep(3 * time.Second)
		st := rc.Stats()
		if st.Dropped == 0 || st.Queued < queue || st.Lag < 3*time.Second {
			t.Errorf("while stalled: %+v; want drops, %d queued or more (the stuck batch too), a lag of 3 s or more", st, queue)
		}
		close(release)
		synctest.Wait()
		add(100) // the session's next records carry its gap
		if err := rc.Close(); err != nil {
			t.Fatal(err)
		}

		got, r, err := readAll(t, dir)
		if err != nil {
			t.Fatal(err)
		}
		var added, dropped int64
		addedBy := map[uint64][]Record{}
		droppedBy := map[uint64]int64{}
		for _, s := range all {
			if s.ok {
				added++
				addedBy[s.r.Session] = append(addedBy[s.r.Session], s.r)
			} else {
				dropped++
				droppedBy[s.r.Session]++
			}
		}
		var written int64
		writtenBy := map[uint64][]*Record{}
		gapsBy := map[uint64]int64{}
		for _, g := range got {
			if g.Kind == KindGap {
				gapsBy[g.Session] += g.Dropped
				continue
			}
			written++
			writtenBy[g.Session] = append(writtenBy[g.Session], g)
		}
		if added != written || added+dropped != int64(len(all)) || dropped == 0 {
			t.Errorf("added %d = written %d? added + dropped %d = %d?", added, written, dropped, len(all))
		}
		for s, n := range droppedBy {
			if gapsBy[s] != n {
				t.Errorf("session %d: dropped %d, its gaps say %d", s, n, gapsBy[s])
			}
		}
		for s, want := range addedBy {
			for i := range want {
				if !sameRecord(writtenBy[s][i], &want[i]) {
					t.Fatalf("session %d record %d out of order", s, i)
				}
			}
		}
		m := r.Info()
		if m.Complete || m.Reason != ReasonFellBehind || m.Dropped != dropped {
			t.Errorf("manifest %+v; want incomplete, %q, %d dropped", m.Manifest, ReasonFellBehind, dropped)
		}
		if st := rc.Stats(); st.Dropped != dropped || st.Queued != 0 || st.Lag != 0 {
			t.Errorf("after Close: %+v", st)
		}
	})
}

// A gap is written where the session lost records, before the session's
// next record.
func TestRecorderGapPrecedesNextRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		w, release := stalledWriter(t, dir, 1)
		rc := NewRecorder(w, RecorderOptions{Queue: 2})
		add := func(i int) bool {
			return rc.Add(Record{Kind: KindReady, Session: 7, Time: int64(i), TxStatus: 'I'})
		}
		add(0)
		synctest.Wait() // writing record 0, stuck
		for i := 1; i <= 4; i++ {
			if ok := add(i); ok != (i <= 2) {
				t.Fatalf("Add(%d) = %v", i, ok)
			}
		}
		close(release)
		synctest.Wait() // written all, idle
		add(5)
		if err := rc.Close(); err != nil {
			t.Fatal(err)
		}
		got, _, err := readAll(t, dir)
		if err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, g := range got {
			kinds = append(kinds, fmt.Sprintf("%v@%d", g.Kind, g.Time))
		}
		if len(got) != 5 || got[3].Kind != KindGap || got[3].Dropped != 2 || got[3].Time != 4 || got[4].Time != 5 {
			t.Errorf("records %v, want ready 0, 1, 2, a gap of 2, ready 5", kinds)
		}
	})
}

// When the disk fills, recording stops but Add still returns at once:
// the proxy keeps forwarding.
func TestRecorderStopsOnWriterFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		w, err := Create(dir, WriterOptions{Start: t0, FrameSize: 1 << 10, WrapFile: diskFullAfter(4 << 10)})
		if err != nil {
			t.Fatal(err)
		}
		rc := NewRecorder(w, RecorderOptions{})
		var added, refused int64
		recs := sessions(300)
		for i := range recs {
			if rc.Add(recs[i]) {
				added++
			} else {
				refused++
			}
			if i%100 == 0 {
				synctest.Wait()
			}
		}
		synctest.Wait()
		st := rc.Stats()
		if st.Stopped != ReasonDiskFull || !errors.Is(rc.Err(), syscall.ENOSPC) {
			t.Fatalf("Stats() = %+v, Err() = %v; want stopped, disk full", st, rc.Err())
		}
		if refused == 0 {
			t.Error("no Add refused after the disk filled")
		}
		before := st.Dropped
		start := time.Now()
		if rc.Add(recs[0]) {
			t.Error("Add took a record after the writer stopped")
		}
		if time.Since(start) != 0 || rc.Stats().Dropped != before+1 {
			t.Error("Add after the stop waited or did not count")
		}
		if err := rc.Close(); err != nil {
			t.Fatal(err)
		}
		got, r, err := readAll(t, dir)
		if err != nil {
			t.Fatal(err)
		}
		m := r.Info()
		if m.Complete || m.Reason != ReasonDiskFull || m.Records != int64(len(got)) || m.Records+m.Dropped != int64(len(recs))+1 {
			t.Errorf("manifest %+v; %d records read of %d added", m.Manifest, len(got), len(recs)+1)
		}
	})
}

// What the recorder wrote reaches the file within FlushInterval even when
// no more records come to fill a chunk.
func TestRecorderFlushesWhileIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		w, err := Create(dir, WriterOptions{Start: t0})
		if err != nil {
			t.Fatal(err)
		}
		rc := NewRecorder(w, RecorderOptions{FlushInterval: 100 * time.Millisecond})
		defer rc.Close()
		recs := oneOfEach(1, t0.UnixMicro())
		for _, r := range recs {
			rc.Add(r)
		}
		r, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		synctest.Wait()
		if rec, err := r.Next(); err != io.EOF {
			t.Fatalf("before the interval: %+v, %v; want io.EOF", rec, err)
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		for i := range recs {
			rec, err := r.Next()
			if err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
			if !sameRecord(rec, &recs[i]) {
				t.Fatalf("record %d: %+v", i, rec)
			}
		}
	})
}

// BenchmarkRecorder measures what a recorder sustains from Add to the
// file: Bind messages of about 100 bytes from 64 sessions. It waits when
// the queue is half full rather than drop, so records/s is the writing
// goroutine's pace (encoding, zstd, write), Close's drain included.
func BenchmarkRecorder(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "cap")
	w, err := Create(dir, WriterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	rc := NewRecorder(w, RecorderOptions{})
	msg := bind()
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	// Half the queue's bound in records, whichever of its two bounds
	// (records, bytes) these records reach first: the bytes, here.
	half := min(defaultQueue, int(defaultQueueBytes/(recordCost+int64(len(msg))))) / 2
	start := time.Now()
	var i int64
	for b.Loop() {
		i++
		if i%1024 == 0 {
			for rc.Stats().Queued > half {
				runtime.Gosched()
			}
		}
		rc.Add(Record{Kind: KindFrontend, Session: uint64(i%64 + 1), Time: t0.UnixMicro() + i, Msg: msg})
	}
	if err := rc.Close(); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	st := rc.Stats()
	if st.Dropped > 0 {
		b.Errorf("%d dropped", st.Dropped)
	}
	b.ReportMetric(float64(i)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(st.Bytes)/float64(i), "file-B/record")
}

// BenchmarkReader reads back what BenchmarkRecorder writes.
func BenchmarkReader(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "cap")
	w, err := Create(dir, WriterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	msg := bind()
	const n = 200000
	for i := range n {
		r := Record{Kind: KindFrontend, Session: uint64(i%64 + 1), Time: t0.UnixMicro() + int64(i), Msg: msg}
		if err := w.Write(&r); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(EndInfo{}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	start := time.Now()
	var read int
	for b.Loop() {
		r, err := Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			read++
		}
		r.Close()
	}
	b.ReportMetric(float64(read)/time.Since(start).Seconds(), "records/s")
}
