package capture

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestWriteReadEveryKind(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cap")
	recs := sessions(3)
	writeCapture(t, dir, WriterOptions{}, recs, EndInfo{Stop: t0.Add(time.Minute)})
	got, r, err := readAll(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, got, recs)
	info := r.Info()
	want := Manifest{
		Format: "pgrehearse-capture", Version: Version, Start: t0, Stop: t0.Add(time.Minute),
		Segments: 1, Sessions: 3, Records: int64(len(recs)), Bytes: info.Bytes, Complete: true,
	}
	if !info.Finalized || info.Partial || info.Manifest != want {
		t.Errorf("Info() = %+v, want finalized, not partial, %+v", info, want)
	}
	counts := r.Counts()
	for k := KindStartup; k <= KindGap; k++ {
		if counts[k] != 3 {
			t.Errorf("Counts()[%v] = %d, want 3", k, counts[k])
		}
	}
	if read, size := r.Progress(); read != size || size != info.Bytes {
		t.Errorf("Progress() = %d, %d; want both %d", read, size, info.Bytes)
	}
}

// A capture is split into segments once one holds FileSize bytes, and read
// back as one stream in the order written.
func TestWriterSplitsSegments(t *testing.T) {
	dir := t.TempDir()
	var recs []Record
	for i := range 2000 {
		recs = append(recs, Record{Kind: KindFrontend, Session: uint64(i%7 + 1), Time: t0.UnixMicro() + int64(i), Msg: []byte(fmt.Sprintf("Q\x00\x00\x00\x20SELECT %d, 'not very compressible %x'\x00", i, i*7919))})
	}
	writeCapture(t, dir, WriterOptions{FileSize: 4 << 10, FrameSize: 1 << 10}, recs, EndInfo{})
	seqs, err := segments(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(seqs) < 3 {
		t.Fatalf("%d segments, want several", len(seqs))
	}
	for i, s := range seqs {
		if s != uint32(i+1) {
			t.Fatalf("segments %v are not 1..n", seqs)
		}
	}
	ents, _ := os.ReadDir(dir)
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.IsSorted(names) || names[0] != "capture-000001.pgcap" {
		t.Errorf("names %v", names)
	}
	got, r, err := readAll(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, got, recs)
	if m := r.Info(); m.Segments != len(seqs) || m.Records != int64(len(recs)) {
		t.Errorf("manifest %+v, want %d segments, %d records", m.Manifest, len(seqs), len(recs))
	}
}

func TestFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "cap")
	writeCapture(t, dir, WriterOptions{}, sessions(1), EndInfo{})
	check := func(path string, want fs.FileMode) {
		t.Helper()
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, st.Mode().Perm(), want)
		}
	}
	check(dir, 0o700)
	check(filepath.Join(dir, "capture-000001.pgcap"), 0o600)
	check(filepath.Join(dir, ManifestName), 0o600)
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("dir holds %d files, want a segment and the manifest", len(ents))
	}
}

func TestCreateRefusesCapture(t *testing.T) {
	cases := []struct {
		name    string
		files   []string
		refused bool
	}{
		{"empty", nil, false},
		{"unrelated files", []string{"notes.txt", "capture.json.bak"}, false},
		{"a segment", []string{"capture-000003.pgcap"}, true},
		{"a manifest", []string{ManifestName}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range c.files {
				if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			w, err := Create(dir, WriterOptions{})
			if c.refused {
				if !errors.Is(err, ErrExists) {
					t.Fatalf("Create: %v, want ErrExists", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			w.Close(EndInfo{})
		})
	}
}

// The manifest appears whole or not at all, however often it is written.
func TestManifestAtomic(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var seen, torn int
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			m, err := readManifest(dir)
			switch {
			case errors.Is(err, fs.ErrNotExist):
			case err != nil:
				torn++
			default:
				if m.Records%1000 != 7 {
					torn++
				}
				seen++
			}
		}
	})
	for i := range 300 {
		m := &Manifest{Format: manifestFormat, Version: Version, Records: int64(i*1000 + 7), Reason: Reason(fmt.Sprint(make([]byte, i%50)))}
		if err := writeManifest(dir, m); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if torn > 0 {
		t.Errorf("%d reads saw a partial manifest (%d whole)", torn, seen)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != ManifestName {
		t.Errorf("dir holds %v, want only the manifest (no temporary file)", ents)
	}
}

// failAfter lets limit bytes through and then fails every write with err,
// as a full disk would.
type failAfter struct {
	w     io.Writer
	limit int
	err   error
}

func (f *failAfter) Write(b []byte) (int, error) {
	if len(b) > f.limit {
		n, _ := f.w.Write(b[:f.limit])
		f.limit = 0
		return n, f.err
	}
	f.limit -= len(b)
	return f.w.Write(b)
}

func diskFullAfter(limit int) func(string, io.Writer) io.Writer {
	return func(_ string, w io.Writer) io.Writer {
		return &failAfter{w: w, limit: limit, err: &fs.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}}
	}
}

func TestWriterFailures(t *testing.T) {
	recs := sessions(200)
	cases := []struct {
		name   string
		opts   WriterOptions
		reason Reason
		is     error
	}{
		{"disk full", WriterOptions{FrameSize: 2 << 10, WrapFile: diskFullAfter(6 << 10)}, ReasonDiskFull, syscall.ENOSPC},
		{"write error", WriterOptions{FrameSize: 2 << 10, WrapFile: func(_ string, w io.Writer) io.Writer {
			return &failAfter{w: w, limit: 5 << 10, err: syscall.EIO}
		}}, ReasonWriteError, syscall.EIO},
		{"max size", WriterOptions{FrameSize: 2 << 10, MaxSize: 2 << 10}, ReasonMaxSize, ErrMaxSize},
		{"max size across segments", WriterOptions{FrameSize: 1 << 10, FileSize: 1 << 10, MaxSize: 3 << 10}, ReasonMaxSize, ErrMaxSize},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.opts.Start = t0
			w, err := Create(dir, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			var accepted, refused int64
			var first error
			for i := range recs {
				if err := w.Write(&recs[i]); err != nil {
					if first == nil {
						first = err
					}
					refused++
					continue
				}
				accepted++
			}
			if !errors.Is(first, c.is) {
				t.Fatalf("first error %v, want %v", first, c.is)
			}
			if err := w.Close(EndInfo{Dropped: refused}); err != nil {
				t.Fatalf("Close: %v", err)
			}
			got, r, err := readAll(t, dir)
			if err != nil {
				t.Fatalf("reading what was written: %v", err)
			}
			checkRecords(t, got, recs[:len(got)])
			m := r.Info()
			if m.Complete || m.Reason != c.reason {
				t.Errorf("manifest says complete %v, reason %q; want incomplete, %q", m.Complete, m.Reason, c.reason)
			}
			if m.Records != int64(len(got)) || m.Records+m.Dropped != int64(len(recs)) {
				t.Errorf("manifest: %d records + %d dropped, read %d of %d", m.Records, m.Dropped, len(got), len(recs))
			}
			if c.opts.MaxSize > 0 {
				if m.Bytes > c.opts.MaxSize {
					t.Errorf("%d bytes written, MaxSize %d", m.Bytes, c.opts.MaxSize)
				}
				if m.Error != "" {
					t.Errorf("Error %q for max size", m.Error)
				}
			} else if m.Error == "" {
				t.Errorf("no Error in the manifest")
			}
			if r.Partial() {
				t.Errorf("partial: the writer did not take back the torn chunk")
			}
		})
	}
}

// TestReserve: while a capture is written, it holds room for its
// manifest on its disk, which Close gives back to write the manifest, so
// that a capture that filled the disk is still finalized and says why.
func TestReserve(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cap")
	w, err := Create(dir, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, reserveName))
	if err != nil || st.Size() != reserveSize || st.Mode().Perm() != 0o600 {
		t.Fatalf("reserve while writing: %v, %v", st, err)
	}
	if err := w.Close(EndInfo{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, reserveName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the reserve is still there after Close: %v", err)
	}
	if _, err := ReadManifest(dir); err != nil {
		t.Error(err)
	}
}
