package logread

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPendingAtEndInLogOrder: statements still waiting for a duration when
// the log ends (log_statement = all, nothing after them in their session)
// come out in the log's order, on every read.
func TestPendingAtEndInLogOrder(t *testing.T) {
	const sessions = 12
	var b strings.Builder
	var want []string
	for i := range sessions {
		// Process ids that fall as the log goes on, so that neither pid
		// nor session key order is log order.
		pid := 900 - 7*i
		pre := fmt.Sprintf("2026-11-22 08:00:%02d.000 UTC [%d] app@shop/web 6571e2a3.%x ", i, pid, pid)
		q := fmt.Sprintf("SELECT %d", i)
		fmt.Fprintf(&b, "%sLOG:  statement: %s\n", pre, q)
		want = append(want, q)
	}
	path := filepath.Join(t.TempDir(), "pending.log")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	// A map's order changes from one iteration to the next: a few reads
	// would show it.
	for range 10 {
		evs, _ := readAll(t, path, Options{Prefix: benchPrefix})
		var got []string
		for _, ev := range evs {
			got = append(got, ev.Query)
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("statements in the order %q, want the log's %q", got, want)
		}
	}
}
