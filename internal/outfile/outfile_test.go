package outfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// TestCheck: a missing directory, a directory given as the file and a
// directory without write permission are refused before any work; a new
// or existing file in a writable directory is fine, and nothing is left.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	ro := filepath.Join(dir, "ro")
	os.Mkdir(ro, 0o555)
	existing := filepath.Join(dir, "old.json")
	os.WriteFile(existing, []byte("old"), 0o644)
	tests := []struct {
		path, want string
	}{
		{filepath.Join(dir, "missing", "out.json"), "does not exist"},
		{dir, "is a directory"},
		{filepath.Join(existing, "x.json"), "is not a directory"},
		{filepath.Join(dir, "new.json"), ""},
		{existing, ""},
		{"-", ""},
		{"", ""},
	}
	if os.Geteuid() != 0 { // root writes anywhere
		tests = append(tests, struct{ path, want string }{filepath.Join(ro, "out.json"), "cannot create a file in"})
	}
	for _, tt := range tests {
		err := Check(tt.path)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("Check(%s) = %v, want %q", tt.path, err, tt.want)
		}
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 2 {
		t.Errorf("Check left files behind: %v", left)
	}
}

// failAfter is a disk that fills after n bytes.
type failAfter struct {
	w io.Writer
	n int
}

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		n, _ := f.w.Write(p[:f.n])
		f.n = 0
		return n, &os.PathError{Op: "write", Path: "tmp", Err: syscall.ENOSPC}
	}
	f.n -= len(p)
	return f.w.Write(p)
}

// TestWriteFullDisk: a write that fails midway (a full disk) leaves the
// previous file whole and no temporary file; a write that succeeds
// replaces it, with mode 0644 less the umask.
func TestWriteFullDisk(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "result.json")
	if err := os.WriteFile(path, []byte("the previous result\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 200<<10)
	wrap = func(w io.Writer) io.Writer { return &failAfter{w: w, n: 100 << 10} }
	err := Write(path, func(w io.Writer) error { _, err := io.WriteString(w, big); return err })
	wrap = func(w io.Writer) io.Writer { return w }
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), path) {
		t.Errorf("full disk: %v, want ENOSPC naming %s", err, path)
	}
	if b, _ := os.ReadFile(path); string(b) != "the previous result\n" {
		t.Errorf("the previous file was changed: %d bytes", len(b))
	}
	// A render that fails is the same.
	if err := Write(path, func(w io.Writer) error { io.WriteString(w, "half"); return errors.New("boom") }); err == nil {
		t.Error("a failed render was written")
	}
	if b, _ := os.ReadFile(path); string(b) != "the previous result\n" {
		t.Errorf("the previous file was changed by a failed render: %q", b)
	}
	if err := Write(path, func(w io.Writer) error { _, err := io.WriteString(w, big); return err }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != big {
		t.Errorf("new file: %d bytes, want %d", len(b), len(big))
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644&^umask() {
		t.Errorf("mode %v", fi.Mode())
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 1 {
		t.Errorf("files left: %v", left)
	}
}

// TestLocked: lines written at once from several goroutines arrive whole.
func TestLocked(t *testing.T) {
	var b lineChecker
	w := Lock(&b)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for range 200 {
				fmt.Fprintf(w, "%d:%s\n", g, strings.Repeat("x", 64))
			}
		})
	}
	wg.Wait()
	if b.writes != 8*200 || b.torn != 0 {
		t.Errorf("%d writes, %d of them overlapping another", b.writes, b.torn)
	}
}

// lineChecker counts writes, and those that began while another was
// still in progress.
type lineChecker struct {
	busy         atomic.Bool
	writes, torn int64
	mu           sync.Mutex
}

func (c *lineChecker) Write(p []byte) (int, error) {
	if !c.busy.CompareAndSwap(false, true) {
		c.mu.Lock()
		c.torn++
		c.mu.Unlock()
		return len(p), nil
	}
	runtime.Gosched()
	c.mu.Lock()
	c.writes++
	c.mu.Unlock()
	c.busy.Store(false)
	return len(p), nil
}
