package cli

import (
	"context"
	"fmt"
	"io"
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
