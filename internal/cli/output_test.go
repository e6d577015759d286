package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/results"
)

// TestOutputCheckedBeforeWork: a replay whose --json cannot be written
// (its directory missing) fails before any statement reaches the target,
// naming the flag; so do analyze, findings, report and plan, before
// reading.
// A result written over a previous one replaces it whole.
func TestOutputCheckedBeforeWork(t *testing.T) {
	ctx, c := parallelServer(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "create.log")
	// The log creates a table: if anything ran, the table exists.
	content := "2024-05-01 10:00:00.000 UTC [101] postgres@postgres/psql 6631f000.65 LOG:  connection authorized: user=postgres database=postgres application_name=psql\n" +
		"2024-05-01 10:00:00.100 UTC [101] postgres@postgres/psql 6631f000.65 LOG:  duration: 1.500 ms  statement: CREATE TABLE replayed (id int)\n" +
		"2024-05-01 10:00:00.200 UTC [101] postgres@postgres/psql 6631f000.65 LOG:  disconnection: session time: 0:00:00.200 user=postgres database=postgres host=[local]\n"
	writeFile(t, log, []byte(content))
	analysis := filepath.Join(dir, "analysis.json")
	if code, _, stderr := runCLI(ctx, "", "analyze", "--prefix", testPrefix, "--json", analysis, log); code != ExitOK {
		t.Fatalf("analyze: exit %d: %s", code, stderr)
	}
	missing := filepath.Join(dir, "no-such-dir", "replay.json")
	for _, args := range [][]string{
		{"report", analysis, analysis, "--json", missing},
		{"report", analysis, analysis, "--html", missing},
		{"plan", "--shards", "2", "--out", missing, log},
		{"replay", "--target", c.DSN("postgres"), "--prefix", testPrefix, "--speed", "0", "--json", missing, log},
		{"analyze", "--prefix", testPrefix, "--json", missing, log},
		{"findings", "--prefix", testPrefix, "--html", missing, log},
	} {
		code, stdout, stderr := runCLI(ctx, "", args...)
		if code == ExitOK || !strings.Contains(stderr, missing) || !strings.Contains(stderr, "does not exist") || stdout != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q: want a failure naming %s before any output", args[0], code, stdout, stderr, missing)
		}
	}
	conn, err := pgconn.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	res, err := conn.Exec(ctx, "SELECT count(*) FROM pg_class WHERE relname = 'replayed'").ReadAll()
	if err != nil || string(res[0].Rows[0][0]) != "0" {
		t.Errorf("the replay ran statements before failing on its output (%v): %v", err, res)
	}

	// Written where it can be: over a previous file, whole.
	out := filepath.Join(dir, "replay.json")
	os.WriteFile(out, []byte(strings.Repeat("x", 1<<20)), 0o644)
	if code, _, stderr := runCLI(ctx, "", "replay", "--target", c.DSN("postgres"), "--prefix", testPrefix, "--speed", "0", "--json", out, log); code != ExitOK {
		t.Fatalf("replay: exit %d: %s", code, stderr)
	}
	b, _ := os.ReadFile(out)
	if !strings.HasPrefix(string(b), "{") || !strings.HasSuffix(string(b), "}\n") {
		t.Errorf("replay.json is not a whole JSON object: %d bytes", len(b))
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".replay.json*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}

	// Findings whose server cannot be reached fail the command, but the
	// result is written all the same.
	os.Remove(out)
	code, _, stderr := runCLI(ctx, "", "replay", "--target", c.DSN("postgres"), "--prefix", testPrefix, "--speed", "0",
		"--findings-dsn", "host=127.0.0.1 port=1 user=nobody dbname=none connect_timeout=2", "--json", out, log)
	if code == ExitOK {
		t.Errorf("replay with unreachable findings: exit 0: %s", stderr)
	}
	if r, err := results.ReadFile(out); err != nil || r.Statements.Total != 1 {
		t.Errorf("the result was not written when the findings failed (exit %d, %s): %v, %+v", code, stderr, err, r)
	}
}
