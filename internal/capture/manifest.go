package capture

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Reason says why a capture is incomplete.
type Reason string

const (
	// ReasonFellBehind: the recorder's queue was full and it dropped
	// records (KindGap records say where).
	ReasonFellBehind Reason = "recorder fell behind"
	// ReasonDiskFull: a write failed with ENOSPC.
	ReasonDiskFull Reason = "disk full"
	// ReasonMaxSize: the capture reached WriterOptions.MaxSize.
	ReasonMaxSize Reason = "max size reached"
	// ReasonWriteError: a write failed for another reason; the manifest's
	// Error says which.
	ReasonWriteError Reason = "write error"
	// ReasonNotFinalized: the capture has no manifest, so whoever wrote
	// it stopped without closing it (the proxy was killed, the machine
	// stopped). Readers report it; it is never written.
	ReasonNotFinalized Reason = "not finalized"
)

// Manifest is capture.json, written once when a capture is closed. Its
// fields are the format's contract with other tools: add, never rename.
type Manifest struct {
	// Format is always "pgrehearse-capture".
	Format string `json:"format"`
	// Version is the format version of the segment files.
	Version int       `json:"version"`
	Start   time.Time `json:"start"`
	Stop    time.Time `json:"stop"`
	// Segments is how many segment files the capture has.
	Segments int `json:"segments"`
	// Sessions is how many sessions started (KindStartup records).
	Sessions int64 `json:"sessions"`
	Records  int64 `json:"records"`
	// Bytes is the size of all segment files.
	Bytes int64 `json:"bytes"`
	// Dropped counts the records lost: dropped by the recorder, or
	// accepted by the writer but never written because it stopped.
	Dropped int64 `json:"dropped"`
	// Complete is true when every record the proxy saw is in the files.
	Complete bool `json:"complete"`
	// Reason says why the capture is incomplete; empty when complete.
	Reason Reason `json:"reason,omitempty"`
	// Error is the write error's text, for ReasonDiskFull and
	// ReasonWriteError.
	Error string `json:"error,omitempty"`
	// StartState is the upstream's state at the start, when the capture
	// was given a monitoring connection (WriterOptions.StartState); nil
	// otherwise, and in captures written before it existed.
	StartState *StartState `json:"start_state,omitempty"`
	// SessionsResumed counts, of Sessions, those recorded from the
	// middle (Record.Resume), and SkippedBeforeRecording the messages
	// they sent before their first idle point, relayed but not
	// recorded, by reason; omitted when none (and in captures written
	// before them).
	SessionsResumed        int64           `json:"sessions_resumed,omitempty"`
	SkippedBeforeRecording SkippedByReason `json:"skipped_before_recording,omitzero"`
}

// SkippedByReason counts messages by the ResumeSkip they were skipped
// for; a struct, not a map, so that a Manifest stays comparable.
type SkippedByReason struct {
	InTransaction int64 `json:"in_transaction_at_start,omitempty"`
	InFlight      int64 `json:"request_in_flight_at_start,omitempty"`
}

// Add counts n messages skipped for why.
func (s *SkippedByReason) Add(why ResumeSkip, n int64) {
	switch why {
	case ResumeInTransaction:
		s.InTransaction += n
	default:
		s.InFlight += n
	}
}

const manifestFormat = "pgrehearse-capture"

// writeManifest writes dir/capture.json so that a reader sees either no
// manifest or the whole of it: a temporary file, synced, renamed over,
// and the directory synced.
func writeManifest(dir string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	tmp, err := os.CreateTemp(dir, ".capture-*.json.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	// CreateTemp makes the file 0600 already; say so for the reader.
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, ManifestName)); err != nil {
		return err
	}
	return syncDir(dir)
}

func readManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("capture: %s: %w", filepath.Join(dir, ManifestName), err)
	}
	if m.Format != manifestFormat {
		return nil, fmt.Errorf("capture: %s: format %q, want %q", filepath.Join(dir, ManifestName), m.Format, manifestFormat)
	}
	return &m, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// AddDropped adds n records lost to the manifest of the finalized,
// incomplete capture in dir, and returns the manifest written. A capture
// whose writer stopped (a full disk, a write error, its maximum size) is
// finalized at once, but the proxy relays on and every record it makes
// after is lost too: they are counted until the proxy stops, and written
// then. The manifest is replaced as it was written, whole or not at all.
func AddDropped(dir string, n int64) (*Manifest, error) {
	m, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	if m.Complete {
		return nil, fmt.Errorf("capture: %s: records lost after a complete capture", filepath.Join(dir, ManifestName))
	}
	m.Dropped += n
	if err := writeManifest(dir, m); err != nil {
		return nil, fmt.Errorf("capture: rewriting the manifest: %w", err)
	}
	return m, nil
}
