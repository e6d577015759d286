package targetlog

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/connstr"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/logread"
	"github.com/pgrehearse/pgrehearse/internal/replay/connlog"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// Wait bounds how long the target's log may take to show the end of the
// replay: the server's logging collector writes asynchronously.
const Wait = 20 * time.Second

// Error is an error of the target's log files, or of reaching the target
// to mark the replay's end in them. Path names the file (or the files,
// comma separated) when one is to blame, and is empty otherwise.
type Error struct {
	Path string
	Err  error
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Err.Error()
	}
	return e.Path + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Files are the target's log files, with where each ended before the
// replay: only what comes after is read.
type Files struct {
	paths   []string
	prefix  string
	offsets []int64
	// before are the names each file's directory held before the
	// replay: a file not among them was begun during it (begun).
	before map[string]map[string]bool
}

// Note records the sizes of the target's log files before the replay. A
// file that does not exist yet starts at 0. prefix is the files'
// log_line_prefix when they are stderr logs; empty means detected. It
// also records what the files' directories hold, so that a file the
// server begins during the replay is read too (begun).
func Note(paths []string, prefix string) *Files {
	f := &Files{paths: paths, prefix: prefix, offsets: make([]int64, len(paths)), before: map[string]map[string]bool{}}
	for i, p := range paths {
		if st, err := os.Stat(p); err == nil {
			f.offsets[i] = st.Size()
		}
		dir := filepath.Dir(p)
		if _, ok := f.before[dir]; ok {
			continue
		}
		names := map[string]bool{}
		if entries, err := os.ReadDir(dir); err == nil {
			for _, e := range entries {
				names[e.Name()] = true
			}
		}
		f.before[dir] = names
	}
	return f
}

// current are the files to read with where to start in each: the files
// noted, then those begun since (begun), from their start.
func (f *Files) current() ([]string, []int64) {
	paths, offsets := slices.Clone(f.paths), slices.Clone(f.offsets)
	for _, p := range f.begun() {
		if !slices.Contains(paths, p) {
			paths, offsets = append(paths, p), append(offsets, 0)
		}
	}
	return paths, offsets
}

// begun are the files the server began during the replay: in a noted
// file's directory, with a noted file's extension, and not there before
// it, in the order of their names (log_filename's time, for the
// default). The logging collector begins a file when it rotates (at
// midnight with the default log_rotation_age of a day, at
// log_rotation_size) or restarts; the marker of the replay's end and its
// last statements are then in that file, not in the one the round began
// with (a rehearsal's sixth round that began at 23:59:59 found no marker
// in the files it had). A file of another server written there meanwhile
// does no harm: match keeps only the replay's own sessions.
func (f *Files) begun() []string {
	exts := map[string]map[string]bool{}
	for _, p := range f.paths {
		dir := filepath.Dir(p)
		if exts[dir] == nil {
			exts[dir] = map[string]bool{}
		}
		exts[dir][filepath.Ext(p)] = true
	}
	var out []string
	for _, dir := range slices.Sorted(maps.Keys(exts)) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.Type().IsRegular() && !f.before[dir][e.Name()] && exts[dir][filepath.Ext(e.Name())] {
				out = append(out, filepath.Join(dir, e.Name()))
			}
		}
	}
	return out
}

// ServerSide waits until the target's log shows a marker statement sent
// after the replay (so it holds every statement of the replay: a backend
// logs a statement before it answers, and the collector writes in the
// order it receives), then reads the part of the log written since the
// replay began and puts in res the server-side durations it shows for
// the replay's connections (conns, replay.Replayer.Connections): see
// match. target is the DSN the marker is sent to; cache fingerprints the
// texts (nil: a new one). Errors of the files are *Error; errors wrap
// ErrSettings when the log lacks the settings it needs.
func (f *Files) ServerSide(ctx context.Context, conns []connlog.Conn, cache *fingerprint.Cache, target string, res *results.Result) error {
	marker, err := sendMarker(ctx, target)
	if err != nil {
		return &Error{Err: err}
	}
	if err := f.waitFor(ctx, marker); err != nil {
		return err
	}
	var sources []event.Source
	paths, offsets := f.current()
	for i, p := range paths {
		file, err := os.Open(p)
		if err != nil {
			return &Error{Err: err}
		}
		defer file.Close()
		if _, err := file.Seek(offsets[i], io.SeekStart); err != nil {
			return &Error{Err: err}
		}
		rd, err := logread.NewReader(file, p, logread.Options{Prefix: f.prefix})
		if err != nil {
			if errors.Is(err, logread.ErrEmptyLog) {
				continue // nothing logged there since the replay began
			}
			return &Error{Path: p, Err: err}
		}
		if rd.Format() == logread.FormatStderr {
			pf := rd.Prefix()
			if !strings.Contains(pf, "%c") || !strings.Contains(pf, "%p") {
				return &Error{Path: p, Err: fmt.Errorf("log_line_prefix %q lacks %%p or %%c: %w", pf, ErrSettings)}
			}
		}
		sources = append(sources, rd)
	}
	return match(res, conns, sources, cache)
}

// sendMarker runs one statement on the target that names a random marker,
// and returns the marker.
func sendMarker(ctx context.Context, target string) (string, error) {
	b := make([]byte, 8)
	rand.Read(b)
	marker := "pgrehearse replay end " + hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cfg, err := connstr.Parse(target)
	if err != nil {
		return "", fmt.Errorf("connect to the target to mark the end of the replay in its log: %w", err)
	}
	// The tool's own: an analysis of the target's log leaves it out.
	cfg.RuntimeParams["application_name"] = event.OwnApplicationPrefix + "marker"
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return "", fmt.Errorf("connect to the target to mark the end of the replay in its log: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT '"+marker+"'").ReadAll(); err != nil {
		return "", fmt.Errorf("mark the end of the replay in the target's log: %w", err)
	}
	return marker, nil
}

// waitFor waits until one of the files shows marker past its offset.
func (f *Files) waitFor(ctx context.Context, marker string) error {
	deadline := time.Now().Add(Wait)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		paths, offsets := f.current()
		for i, p := range paths {
			if fileHas(p, offsets[i], marker) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return &Error{Path: strings.Join(paths, ", "), Err: fmt.Errorf(
				"the statement sent after the replay (%q) is not in it after %v: is it the log of this target, with log_min_duration_statement = 0? %w",
				marker, Wait, ErrSettings)}
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// fileHas reports whether the file holds s after offset, reading it in
// blocks (a long replay's log is large).
func fileHas(path string, offset int64, s string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return false
	}
	buf := make([]byte, 1<<20)
	keep := 0
	for {
		n, err := f.Read(buf[keep:])
		if bytes.Contains(buf[:keep+n], []byte(s)) {
			return true
		}
		if err != nil {
			return false
		}
		// Keep the tail, in case s straddles two blocks.
		tail := min(len(s), keep+n)
		copy(buf, buf[keep+n-tail:keep+n])
		keep = tail
	}
}
