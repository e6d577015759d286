package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestCapturePsqlErrorsAccounted runs psql through the proxy as
// PostgreSQL's regression suite does (issue #46): \gdesc on an incomplete
// query (a Parse the server refuses, with no Execute after it), \d on a
// partitioned table, and a function given, cast to pg_catalog.oid, the
// OID of a sequence the original server assigned. The capture's analysis
// counts the \gdesc error outside any statement, so that its errors by
// SQLSTATE add up to the failed statements plus those; the replay onto a
// fresh server, where the sequence has another OID, explains the failure
// only on the target as a baked id, which the error-rate gate does not
// count: the replay of those few statements passes, saying so.
func TestCapturePsqlErrorsAccounted(t *testing.T) {
	parallelCase(t)
	ctx := context.Background()
	a := pgclustertest.StartT(t, pgcluster.Options{})
	b := pgclustertest.StartT(t, pgcluster.Options{})
	objects := "CREATE TABLE pt (id int, v text) PARTITION BY RANGE (id); " +
		"CREATE TABLE pt1 PARTITION OF pt FOR VALUES FROM (0) TO (100); CREATE SEQUENCE s;"
	// Padding first on the original, so that its OIDs are not the
	// target's.
	var pad strings.Builder
	for i := range 20 {
		pad.WriteString("CREATE TABLE pad" + string(rune('a'+i)) + " (x int); ")
	}
	mustExec(t, a, "postgres", pad.String()+objects)
	mustExec(t, b, "postgres", objects)
	rc := startCapture(t, a.DSN("postgres"))
	bin, err := pgcluster.FindBinDir("", "psql")
	if err != nil {
		t.Fatal(err)
	}
	// No ON_ERROR_STOP: \gdesc's error is one of the workload's.
	cmd := exec.Command(filepath.Join(bin, "psql"), "-X", "-q",
		"-h", rc.host, "-p", rc.port, "-U", a.User(), "-d", "postgres", "-f", "-")
	cmd.Stdin = strings.NewReader("\\d pt\n" +
		"SELECT oid AS seqoid FROM pg_class WHERE relname = 's' \\gset\n" +
		"SELECT pg_catalog.pg_sequence_last_value(:'seqoid'::pg_catalog.oid);\n" +
		"SELECT 1 + \\gdesc\n")
	cmd.Env = append(os.Environ(), "PGSSLMODE=disable", "PGAPPNAME=psql")
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "syntax error at end of input") || !strings.Contains(string(out), "Partitioned table") {
		t.Fatalf("psql did not run the workload:\n%s", out)
	}
	rc.stopOK(t)

	res := filepath.Join(t.TempDir(), "analysis.json")
	code, stdout, stderr := runCLI(ctx, "", "analyze", "--json", res, rc.dir)
	if code != ExitOK {
		t.Fatalf("analyze exited %d:\n%s%s", code, stdout, stderr)
	}
	an := readShardResult(t, res)
	var sum int64
	for _, n := range an.ErrorsBySQLState {
		sum += n
	}
	if an.ErrorsOutsideStatements != 1 || an.ErrorsBySQLState["42601"] != 1 || sum != an.Statements.Failed+an.ErrorsOutsideStatements {
		t.Errorf("errors by SQLSTATE %v (%d), %d failed statements, %d outside any statement: want the 42601 of \\gdesc outside, adding up",
			an.ErrorsBySQLState, sum, an.Statements.Failed, an.ErrorsOutsideStatements)
	}
	if !strings.Contains(stdout, "(1 outside any statement: a Parse or Bind with no Execute, a FATAL)") {
		t.Errorf("analyze's text does not say which errors are outside any statement:\n%s", stdout)
	}

	code, text, rep := runReplay(t, "--target", b.DSN("postgres"), "--speed", "0", "--findings=false", rc.dir)
	if rep == nil {
		t.Fatalf("replay exited %d:\n%s", code, text)
	}
	if o := rep.Outcomes; o.FailedOnlyOnTarget != 1 || o.OnlyOnTargetBakedIDs != 1 || o.OnlyOnTargetBySQLState["XX000"] != 1 {
		t.Errorf("outcomes %+v: want the sequence's OID the only failure on the target, explained as a baked id\n%s", o, text)
	}
	if code != ExitOK || !strings.Contains(text, "--max-error-rate discounts those 1 explained failures") {
		t.Errorf("replay exited %d, want %d: the explained failure counted by the error-rate gate, or not said discounted:\n%s", code, ExitOK, text)
	}
}
