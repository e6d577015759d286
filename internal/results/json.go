package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/querystats"
)

// ErrNotResult is wrapped by Decode's errors for data that is not a
// pgrehearse result at all.
var ErrNotResult = errors.New("not a pgrehearse result")

// Decode reads a result from its JSON form, of this Version or an earlier
// one (2, or 1: written without a version); name says where it came from,
// for messages and Result.Source.
// Unknown fields (a command's findings beside its result) are ignored.
func Decode(data []byte, name string) (*Result, error) {
	var head struct {
		Version *int `json:"version"`
		Kind    Kind `json:"kind"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", name, ErrNotResult, err)
	}
	switch {
	case head.Kind == "":
		return nil, fmt.Errorf("%s: %w (no \"kind\")", name, ErrNotResult)
	case !head.Kind.Valid():
		return nil, fmt.Errorf("%s: kind %q is not a result of analyze or replay: it cannot be compared or merged", name, head.Kind)
	case head.Version != nil && *head.Version > Version:
		return nil, fmt.Errorf("%s: written by a newer pgrehearse (results version %d); this one reads versions up to %d: upgrade it",
			name, *head.Version, Version)
	case head.Version != nil && *head.Version < 2:
		return nil, fmt.Errorf("%s: results version %d does not exist (files before version 2 have no version field)", name, *head.Version)
	}
	r := &Result{}
	if err := json.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", name, ErrNotResult, err)
	}
	r.Source = name
	if head.Version == nil {
		upgradeV1(r)
	}
	if err := r.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return r, nil
}

// ReadFile reads a result from a file.
func ReadFile(path string) (*Result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("result file %s does not exist", path)
		}
		return nil, fmt.Errorf("read result: %w", err)
	}
	return Decode(data, path)
}

// ReadIfResult reads an analysis or replay JSON, or returns nil when path is
// not one (a log, jsonlog included: many objects, none with a kind; a
// capture).
func ReadIfResult(path string) (*Result, error) {
	if path == "-" {
		return nil, nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("file %s does not exist", path)
		}
		return nil, err
	}
	// A directory is a capture (one named *.json too): read as a source.
	if fi.IsDir() || !strings.HasSuffix(path, ".json") || fi.Size() > 1<<30 {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var probe struct {
		Kind string `json:"kind"`
	}
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) && json.Unmarshal(data, &probe) == nil && probe.Kind != "" {
		return Decode(data, path)
	}
	return nil, nil
}

// upgradeV1 fills what version 1 files left implicit: the latency source
// (server-side for an analysis, client round trips for a replay) and an
// analysis's executed statements.
func upgradeV1(r *Result) {
	r.Version = 1
	if r.LatencySource == "" {
		if r.Kind == KindAnalysis {
			r.LatencySource = LatencyServerLog
		} else {
			r.LatencySource = LatencyClient
		}
	}
	if r.Kind == KindAnalysis && r.Statements.Executed == 0 {
		r.Statements.Executed = r.Statements.Total - r.Statements.Failed - r.Statements.SkippedTotal()
	}
	if r.Kind == KindReplay && r.Replay == nil {
		r.Replay = &Replay{}
	}
}

// check validates what consumers rely on.
func (r *Result) check() error {
	if !r.LatencySource.Valid() {
		return fmt.Errorf("unknown latency_source %q (want server_log, client or pg_stat_statements)", r.LatencySource)
	}
	if r.Kind == KindReplay && r.Replay == nil {
		r.Replay = &Replay{}
	}
	if r.Kind == KindAnalysis && r.Replay != nil {
		return errors.New("an analysis with a replay's fields")
	}
	if t := r.Timeline; t != nil && t.BucketMS <= 0 {
		return fmt.Errorf("timeline.bucket_ms must be positive, got %d", t.BucketMS)
	}
	if err := r.Statements.Check(); err != nil && r.Version >= 2 {
		return err
	}
	if r.Files == nil {
		r.Files = []string{}
	}
	// Versions before 3 did not type their reasons.
	if len(r.IncompleteReasons) > len(r.Incomplete) {
		return fmt.Errorf("%d incomplete_reasons for %d incomplete entries", len(r.IncompleteReasons), len(r.Incomplete))
	}
	for len(r.IncompleteReasons) < len(r.Incomplete) {
		r.IncompleteReasons = append(r.IncompleteReasons, IncompleteOther)
	}
	if len(r.DegradedReasons) > len(r.Degraded) {
		return fmt.Errorf("%d degraded_reasons for %d degraded entries", len(r.DegradedReasons), len(r.Degraded))
	}
	for len(r.DegradedReasons) < len(r.Degraded) {
		r.DegradedReasons = append(r.DegradedReasons, DegradedOther)
	}
	if p := r.Part; p != nil {
		if err := p.check(); err != nil {
			return err
		}
	}
	if r.ErrorsBySQLState == nil {
		r.ErrorsBySQLState = map[string]int64{}
	}
	if r.Statements.Skipped == nil {
		r.Statements.Skipped = map[SkipReason]int64{}
	}
	if r.Queries == nil {
		r.Queries = []querystats.Row{}
	}
	return nil
}

// Encode writes r's JSON form, indented.
func Encode(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
