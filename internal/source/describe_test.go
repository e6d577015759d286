package source

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/logread"
	"github.com/pgrehearse/pgrehearse/internal/shard"
)

// writeTestCapture writes a capture of one session sending queries, in
// segments of about fileSize bytes.
func writeTestCapture(t *testing.T, dir string, queries int, fileSize int64) {
	t.Helper()
	start := time.Date(2026, 11, 25, 6, 30, 0, 0, time.UTC)
	w, err := capture.Create(dir, capture.WriterOptions{Start: start, FileSize: fileSize, FrameSize: 512})
	if err != nil {
		t.Fatal(err)
	}
	at := start.UnixMicro()
	recs := []capture.Record{{Kind: capture.KindStartup, Session: 1, Time: at, Params: []capture.Param{{Name: "user", Value: "u"}, {Name: "database", Value: "d"}}, ProtocolMajor: 3}}
	for i := range queries {
		sql := "SELECT " + string(rune('a'+i%26)) + " FROM t WHERE id = " + strconv.Itoa(i)
		msg := append([]byte{'Q', 0, 0, 0, 0}, sql...)
		msg = append(msg, 0)
		binary.BigEndian.PutUint32(msg[1:], uint32(len(msg)-1))
		recs = append(recs, capture.Record{Kind: capture.KindFrontend, Session: 1, Time: at + int64(i)*100 + 10, Msg: msg},
			capture.Record{Kind: capture.KindComplete, Session: 1, Time: at + int64(i)*100 + 50, Tag: "SELECT 1"},
			capture.Record{Kind: capture.KindReady, Session: 1, Time: at + int64(i)*100 + 60, TxStatus: 'I'})
	}
	recs = append(recs, capture.Record{Kind: capture.KindEnd, Session: 1, Time: at + int64(queries)*100 + 100, End: capture.EndTerminate})
	for i := range recs {
		if err := w.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(capture.EndInfo{}); err != nil {
		t.Fatal(err)
	}
}

// TestDescribeCapture: a capture directory is named by its segments
// together, as a shard plan and every shard's result name their input:
// a copy elsewhere is the same input, a capture whose segment changed is
// not, and a directory that is not a capture is refused.
func TestDescribeCapture(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "capture")
	writeTestCapture(t, dir, 400, 2<<10)
	segs, err := capture.Segments(dir)
	if err != nil || len(segs) < 2 {
		t.Fatalf("segments %v: %v; want several", segs, err)
	}
	d, err := Describe(dir)
	if err != nil {
		t.Fatal(err)
	}
	var size int64
	for _, s := range segs {
		st, err := os.Stat(s)
		if err != nil {
			t.Fatal(err)
		}
		size += st.Size()
	}
	if d.Name != dir || d.Size != size || len(d.Hash) != 64 {
		t.Errorf("describe %+v: want the segments' %d bytes and a SHA-256", d, size)
	}

	// A copy, manifest left behind: the same input.
	cp := filepath.Join(t.TempDir(), "copy")
	if err := os.Mkdir(cp, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, s := range segs {
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cp, filepath.Base(s)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if c, err := Describe(cp); err != nil || c.Size != d.Size || c.Hash != d.Hash {
		t.Errorf("copy %+v (%v), original %+v: want the same size and hash", c, err, d)
	}

	// The last segment grown by a byte: another input.
	f, err := os.OpenFile(filepath.Join(cp, filepath.Base(segs[len(segs)-1])), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{0})
	f.Close()
	if c, err := Describe(cp); err != nil || c.Hash == d.Hash || c.Size != d.Size+1 {
		t.Errorf("grown copy %+v (%v), original %+v: want another hash", c, err, d)
	}

	// One segment file is a file like a log.
	fh, err := shard.FileHash(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	if one, err := Describe(segs[0]); err != nil || one != fh {
		t.Errorf("one segment: %+v (%v), want shard.FileHash's %+v", one, err, fh)
	}

	if _, err := Describe(t.TempDir()); err == nil {
		t.Error("an empty directory was described as an input")
	}

	// Open names the capture as Describe does.
	set, err := Open([]string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if in := set.Input(); !in.Known() || in.Files[0].Size != d.Size || in.Files[0].Hash != d.Hash {
		t.Errorf("Open's input %+v, Describe's %+v", in.Files, d)
	}
}

// TestOpenCaptureLogOptions: a log's format or prefix given for a
// capture is not used, and a warning names the capture; without them,
// nothing is said.
func TestOpenCaptureLogOptions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "capture")
	writeTestCapture(t, dir, 3, 0)
	for _, tc := range []struct {
		log  logread.Options
		warn bool
	}{
		{logread.Options{}, false},
		{logread.Options{Format: logread.FormatAuto}, false},
		{logread.Options{Format: logread.FormatCSV}, true},
		{logread.Options{Prefix: "%m [%p] "}, true},
	} {
		var warnings []string
		set, err := Open([]string{dir}, Options{Log: tc.log, Warn: func(w string) { warnings = append(warnings, w) }})
		if err != nil {
			t.Fatal(err)
		}
		if n := readAll(t, set); n != 3 {
			t.Errorf("%+v: %d statements read, want 3", tc.log, n)
		}
		set.Close()
		if got := len(warnings) == 1 && strings.Contains(warnings[0], dir+" is a capture"); got != tc.warn || len(warnings) > 1 {
			t.Errorf("%+v: warnings %q, want one naming the capture: %v", tc.log, warnings, tc.warn)
		}
	}
}

// TestOpenCaptureSegment: one segment file is read as a capture; alone
// of several, a warning says the sessions going on in the others are cut
// (and the decoder, that they were open at its end); none is said for the
// only segment of a closed capture. A capture on
// standard input is refused with the way to read it.
func TestOpenCaptureSegment(t *testing.T) {
	one, several := filepath.Join(t.TempDir(), "one"), filepath.Join(t.TempDir(), "several")
	writeTestCapture(t, one, 5, 0)
	writeTestCapture(t, several, 400, 2<<10)
	lone := filepath.Join(t.TempDir(), "lone.pgcap")
	segs, err := capture.Segments(one)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lone, b, 0o600); err != nil {
		t.Fatal(err)
	}
	manySegs, err := capture.Segments(several)
	if err != nil || len(manySegs) < 2 {
		t.Fatalf("segments %v: %v", manySegs, err)
	}
	for _, tc := range []struct {
		path, warn string
		statements int
	}{
		{segs[0], "", 5},
		{manySegs[0], fmt.Sprintf("one segment file of a capture of %d, read alone", len(manySegs)), -1},
		{lone, "has no manifest", 5},
	} {
		set, err := Open([]string{tc.path}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		n := readAll(t, set)
		ws := set.Warnings()
		set.Close()
		if tc.statements >= 0 && n != tc.statements {
			t.Errorf("%s: %d statements, want %d", tc.path, n, tc.statements)
		}
		said := false
		for _, w := range ws {
			said = said || strings.Contains(w.Text, tc.warn)
		}
		switch {
		case tc.warn == "" && len(ws) != 0:
			t.Errorf("%s: warnings %v, want none", tc.path, ws)
		case tc.warn != "" && !said:
			t.Errorf("%s: warnings %v, want one saying %q", tc.path, ws, tc.warn)
		}
	}

	_, err = Open([]string{"-"}, Options{Log: logread.Options{Stdin: bytes.NewReader(b)}})
	if !errors.Is(err, ErrCaptureStdin) {
		t.Errorf("a capture on standard input: %v, want %v", err, ErrCaptureStdin)
	}
	// A log on standard input is still read whole.
	set, err := Open([]string{"-"}, Options{Log: logread.Options{Stdin: strings.NewReader(stderrLog(time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC), 20))}})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if n := readAll(t, set); n != 20 {
		t.Errorf("a log on standard input: %d statements, want 20", n)
	}
}
