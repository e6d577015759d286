package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/logread"
)

// TestEventsCount: events --count prints, per kind, as many events as the
// reader gives.
func TestEventsCount(t *testing.T) {
	code, stdout, stderr := runCLI(context.Background(), "", "events", "--count", "--prefix", testPrefix, smallLog)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	r, err := logread.Open(smallLog, logread.Options{Prefix: testPrefix})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	want := map[event.Kind]int{}
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		want[ev.Kind]++
	}
	if want[event.Statement]+want[event.Execute] == 0 || want[event.Error] == 0 {
		t.Fatalf("the test log has too few kinds of events: %v", want)
	}
	for _, k := range []event.Kind{event.Connect, event.Disconnect, event.Statement, event.Prepare, event.Execute, event.Error} {
		line := fmt.Sprintf("  %-10s %d\n", k.String()+":", want[k])
		if !strings.Contains(stdout, line) {
			t.Errorf("missing %q in:\n%s", line, stdout)
		}
	}
	if !strings.Contains(stdout, "lines: 18 total, 17 parsed, 1 skipped") {
		t.Errorf("line counts missing:\n%s", stdout)
	}
}

// TestEventsWindow: events --start/--end print only the events of the
// window, in order; a window the log does not reach is refused for that
// reason (exit 4), and an end before the start is a usage error.
func TestEventsWindow(t *testing.T) {
	ctx := context.Background()
	code, stdout, stderr := runCLI(ctx, "", "events", "--prefix", testPrefix,
		"--start", "2024-05-01T10:00:00.3Z", "--end", "2024-05-01T10:00:00.65Z", smallLog)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var ev struct{ Time, Kind string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		got = append(got, ev.Time+" "+ev.Kind)
	}
	want := []string{
		"2024-05-01T10:00:00.400000Z statement",
		"2024-05-01T10:00:00.400000Z error",
		"2024-05-01T10:00:00.500000Z connect",
		"2024-05-01T10:00:00.599980Z prepare",
		"2024-05-01T10:00:00.600600Z execute",
	}
	if !slices.Equal(got, want) {
		t.Errorf("events in the window:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	code, _, stderr = runCLI(ctx, "", "events", "--prefix", testPrefix, "--start", "2025-01-01T00:00:00Z", smallLog)
	if code != ExitNoInput || !strings.Contains(stderr, "outside the time window") {
		t.Errorf("a window after the log: exit %d, want %d naming the window:\n%s", code, ExitNoInput, stderr)
	}
	code, _, stderr = runCLI(ctx, "", "events", "--prefix", testPrefix, "--start", "2024-05-01T11:00:00Z", "--end", "2024-05-01T10:00:00Z", smallLog)
	if code != ExitUsage || !strings.Contains(stderr, "--end must be after --start") {
		t.Errorf("an end before the start: exit %d, want %d:\n%s", code, ExitUsage, stderr)
	}
}
