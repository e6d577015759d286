package logread

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/event"
)

// goldenStderr lists the hand-written logs under testdata/stderr, with the
// log_line_prefix they were written with and the error reading must end
// in, if any. Each has a .golden file next to it: go test -update rewrites
// them, and a reviewer reads the diff.
var goldenStderr = []struct {
	file   string
	prefix string
	err    error
}{
	// log_statement = all + log_duration, sessions known only by process
	// (no %c): pairing of "duration:" lines, multi-line statements,
	// log_error_verbosity = verbose, FATAL without statement, garbage,
	// orphan DETAIL and a last line cut at EOF.
	{file: "log_statement.log", prefix: "%m [%p] %q%u@%d/%a "},
	// log_min_duration_statement = 0 with the extended protocol: parse,
	// bind and execute, parameters (multi-line, truncated, missing,
	// "Parameters:"), portal fetches and failures after bind and in bind.
	{file: "min_duration.log", prefix: "%m [%p] %c %q%u@%d/%a "},
	// lc_messages = 'de_DE': a translated severity, then translated LOG
	// messages alone.
	{file: "german.log", prefix: "%m [%p] ", err: ErrNotEnglish},
	{file: "german_duration.log", prefix: "%m [%p] ", err: ErrNotEnglish},
}

func TestStderrGolden(t *testing.T) {
	for _, g := range goldenStderr {
		t.Run(g.file, func(t *testing.T) {
			path := filepath.Join("testdata/stderr", g.file)
			r, err := Open(path, Options{Format: FormatStderr, Prefix: g.prefix})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var evs []*event.Event
			for {
				ev, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					if g.err == nil || !errors.Is(err, g.err) {
						t.Fatalf("Next: %v, want error %v", err, g.err)
					}
					// The error must stay: a caller that calls Next again
					// must not read on past a language it cannot parse.
					if _, again := r.Next(); again != err {
						t.Errorf("Next after %v returned %v", err, again)
					}
					golden(t, strings.TrimSuffix(path, ".log")+".golden", "error: "+err.Error()+"\n")
					return
				}
				evs = append(evs, ev)
			}
			if g.err != nil {
				t.Fatalf("read to EOF, want error %v", g.err)
			}
			c := r.Counters()
			if want := countLines(t, path); c.Total != want {
				t.Errorf("lines.total = %d, file has %d lines", c.Total, want)
			}
			if c.Total != c.Parsed+c.SkippedTotal() {
				t.Errorf("total %d != parsed %d + skipped %d", c.Total, c.Parsed, c.SkippedTotal())
			}
			golden(t, strings.TrimSuffix(path, ".log")+".golden", dumpEvents(evs, c))
		})
	}
}

// dumpEvents renders events and counters for a golden file: one header
// line per event, then its text fields quoted so that newlines show.
func dumpEvents(evs []*event.Event, c *Counters) string {
	var b strings.Builder
	for _, ev := range evs {
		ts := "-"
		if ev.Time != 0 {
			ts = time.UnixMicro(ev.Time).UTC().Format("15:04:05.000000")
		}
		dur := "-"
		if ev.Duration >= 0 {
			dur = fmt.Sprintf("%.3fms", float64(ev.Duration)/1000)
		}
		fmt.Fprintf(&b, "line %d %s session=%s pid=%d user=%q db=%q app=%q at=%s dur=%s",
			ev.Line, ev.Kind, ev.Session, ev.PID, ev.User, ev.Database, ev.Application, ts, dur)
		if ev.Name != "" || ev.Portal() != "" {
			fmt.Fprintf(&b, " name=%q portal=%q", ev.Name, ev.Portal())
		}
		b.WriteString("\n")
		if ev.Query != "" {
			fmt.Fprintf(&b, "  query: %q\n", ev.Query)
		}
		if ev.Kind == event.Execute {
			state := [...]string{"complete", "missing", "truncated"}[ev.ParamState]
			fmt.Fprintf(&b, "  params (%s): [%s]\n", state, strings.Join(quotedParams(ev), ", "))
		}
		if ev.Failed || ev.Kind == event.Error {
			fmt.Fprintf(&b, "  failed=%v %s %q: %q\n", ev.Failed, ev.ErrorSeverity(), ev.SQLState, ev.ErrorMessage())
		}
		for _, p := range ev.Plans() {
			first, _, _ := strings.Cut(p.Text, "\n")
			fmt.Fprintf(&b, "  plan %s analyzed=%v %d lines: %q\n", p.Format, p.Analyzed, strings.Count(p.Text, "\n")+1, first)
		}
	}
	fmt.Fprintf(&b, "lines: total %d, parsed %d\n", c.Total, c.Parsed)
	reasons := c.Reasons()
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(&b, "  skipped %s: %d\n", r, c.Skipped[r])
	}
	return b.String()
}
