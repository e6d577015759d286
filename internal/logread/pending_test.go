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

// TestErrorAfterLoggedExecute: an error whose statement is that of an
// execution already logged with its duration (raised at Sync, or in a
// later fetch from the portal) is an Error event only, not one more
// failed execution with $1 and no parameters; csvlog reads it alike.
func TestErrorAfterLoggedExecute(t *testing.T) {
	const p = "2026-11-22 08:11:02.123 UTC [7] app@shop/web "
	log := p + "LOG:  duration: 0.050 ms  bind <unnamed>: INSERT INTO ch VALUES ($1)\n" +
		p + "DETAIL:  parameters: $1 = '7'\n" +
		p + "LOG:  duration: 0.100 ms  execute <unnamed>: INSERT INTO ch VALUES ($1)\n" +
		p + "DETAIL:  parameters: $1 = '7'\n" +
		p + "ERROR:  insert or update on table \"ch\" violates foreign key constraint \"ch_pid_fkey\"\n" +
		p + "STATEMENT:  INSERT INTO ch VALUES ($1)\n" +
		p + "LOG:  duration: 0.100 ms  statement: SELECT 1\n" +
		p + "ERROR:  division by zero\n" +
		p + "STATEMENT:  SELECT 1\n"
	r, err := NewReader(strings.NewReader(log), "t", Options{Prefix: "%m [%p] %q%u@%d/%a "})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, ev := range allEvents(t, r) {
		kinds = append(kinds, fmt.Sprintf("%s failed=%v params=%d", ev.Kind, ev.Failed, len(ev.Params)))
	}
	want := []string{"execute failed=false params=1", "error failed=false params=0",
		// A simple statement run again and failing is another execution.
		"statement failed=false params=0", "statement failed=true params=0", "error failed=false params=0"}
	if strings.Join(kinds, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(kinds, "\n"), strings.Join(want, "\n"))
	}
}
