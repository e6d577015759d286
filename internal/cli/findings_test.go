package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/findings"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

func TestFindingsCommandOffline(t *testing.T) {
	ctx := context.Background()
	jsonPath := filepath.Join(t.TempDir(), "a.json")
	if code, _, stderr := runCLI(ctx, "", "analyze", "--prefix", testPrefix, "--json", jsonPath, smallLog); code != ExitOK {
		t.Fatalf("analyze: exit %d\n%s", code, stderr)
	}
	for _, input := range []string{jsonPath, smallLog} {
		args := []string{"findings", "--json", "-", input}
		if input == smallLog {
			args = []string{"findings", "--prefix", testPrefix, "--json", "-", input}
		}
		code, stdout, stderr := runCLI(ctx, "", args...)
		if code != ExitOK {
			t.Fatalf("findings %s: exit %d\n%s", input, code, stderr)
		}
		var rep findings.Report
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil || rep.Kind != "findings" {
			t.Fatalf("findings %s: JSON %v\n%s", input, err, stdout)
		}
		// No server: what needs one says so.
		if !strings.Contains(stderr, "missing-index: no connection to the server (--dsn)") {
			t.Errorf("findings %s: text lacks the missing-index skip:\n%s", input, stderr)
		}
	}
	if code, _, _ := runCLI(ctx, "", "findings", "--server-cpus", "-1", jsonPath); code != ExitUsage {
		t.Errorf("--server-cpus -1: exit %d, want %d", code, ExitUsage)
	}
}

// insertEvents makes on c's postgres database the workload the findings
// tests read: a table with two partial indexes, and 800 rows inserted one
// statement at a time (batch-inserts). It returns the connection that
// inserted them, open.
func insertEvents(ctx context.Context, t *testing.T, c *pgcluster.Cluster) *pgx.Conn {
	t.Helper()
	mustExec(t, c, "postgres", `CREATE TABLE events (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, kind int);
		CREATE INDEX events_kind_1 ON events (id) WHERE kind = 1;
		CREATE INDEX events_kind_2 ON events (id) WHERE kind = 2`)
	conn := pgclustertest.Connect(ctx, t, c.DSN("postgres"))
	for i := range 800 {
		if _, err := conn.Exec(ctx, "INSERT INTO events (kind) VALUES ($1)", i%3); err != nil {
			t.Fatal(err)
		}
	}
	return conn
}

// TestFindingsCommandOnLogs runs the command on a captured log with --dsn:
// the log gives the sessions, the server the partial indexes and, as it is
// local, the CPU count.
func TestFindingsCommandOnLogs(t *testing.T) {
	parallelCase(t)
	ctx := context.Background()
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: workload.LogSettings()})
	conn := insertEvents(ctx, t, c)
	const marker = "findings-cli-end"
	if _, err := conn.Exec(ctx, "SELECT '"+marker+"'"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	csvLog := pgclustertest.LogFile(t, c, "*.csv")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(csvLog)
		if strings.Contains(string(b), marker) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("marker never logged")
		}
	}
	html := filepath.Join(t.TempDir(), "f.html")
	code, stdout, stderr := runCLI(ctx, "", "findings", "--dsn", c.DSN("postgres"), "--html", html, csvLog)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{
		"batch-inserts: events",
		"sessions 1",
		"partial_indexes 2",
		"events_kind_1",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "server CPU count unknown") {
		t.Errorf("the CPU count of a local server was not detected:\n%s", stdout)
	}
	page, err := os.ReadFile(html)
	if err != nil || !strings.Contains(string(page), "batch-inserts") {
		t.Errorf("HTML: %v", err)
	}
}
