package cli

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	capturefile "github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestCaptureAnalyzeErrors: analyze of a capture counts every failed
// statement by its SQLSTATE, as it does a log's: a division by zero (in
// the simple and the extended protocol), a missing table and a
// statement the application cancelled (57014) add up to the failed
// statements. The same capture without its manifest (its proxy killed)
// is incomplete: exit 5, and the JSON says why.
func TestCaptureAnalyzeErrors(t *testing.T) {
	parallelCase(t)
	ctx := context.Background()
	c := pgclustertest.StartT(t, pgcluster.Options{})
	rc := startCapture(t, c.DSN("postgres"))
	conn, err := pgx.Connect(ctx, rc.dsn(c.User(), "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"SELECT 1/0", "SELECT * FROM no_such_table"} {
		if _, err := conn.Exec(ctx, q, pgx.QueryExecModeSimpleProtocol); err == nil {
			t.Fatalf("%s did not fail", q)
		}
	}
	if _, err := conn.Exec(ctx, "SELECT 1 / $1", int32(0)); err == nil {
		t.Fatal("1 / 0 did not fail")
	}
	// Cancelled by the application through the proxy once it runs.
	done := make(chan error, 1)
	go func() {
		_, err := conn.Exec(ctx, "SELECT pg_sleep(30)")
		done <- err
	}()
	direct, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close(ctx)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for running := false; !running; <-tick.C {
		if err := direct.QueryRow(ctx, "SELECT count(*) > 0 FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)' AND state = 'active'").Scan(&running); err != nil {
			t.Fatal(err)
		}
	}
	if err := conn.PgConn().CancelRequest(ctx); err != nil {
		t.Fatal(err)
	}
	err = <-done
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "57014" {
		t.Fatalf("the cancelled statement: %v, want 57014", err)
	}
	conn.Close(ctx)
	if code, out := rc.stop(t); code != ExitOK {
		t.Fatalf("capture exited %d:\n%s", code, out)
	}

	out := filepath.Join(t.TempDir(), "analysis.json")
	code, stdout, stderr := runCLI(ctx, "", "analyze", "--json", out, rc.dir)
	if code != ExitOK {
		t.Fatalf("analyze exited %d:\n%s%s", code, stdout, stderr)
	}
	res := readShardResult(t, out)
	var sum int64
	for _, n := range res.ErrorsBySQLState {
		sum += n
	}
	if res.Statements.Failed != 4 || sum != res.Statements.Failed || res.ErrorsBySQLState["57014"] != 1 || res.ErrorsBySQLState["22012"] != 2 {
		t.Errorf("%d failed statements, errors by SQLSTATE %v: want 4, with 22012 twice and 57014 once", res.Statements.Failed, res.ErrorsBySQLState)
	}

	// Its proxy killed: no manifest.
	if err := os.Remove(filepath.Join(rc.dir, capturefile.ManifestName)); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runCLI(ctx, "", "analyze", "--json", out, rc.dir)
	if code != ExitIncomplete {
		t.Errorf("analyze of a capture without a manifest exited %d, want %d:\n%s%s", code, ExitIncomplete, stdout, stderr)
	}
	var cut struct{ Incomplete []string }
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cut); err != nil {
		t.Fatal(err)
	}
	if len(cut.Incomplete) == 0 || !strings.Contains(strings.Join(cut.Incomplete, " "), "no manifest") {
		t.Errorf("incomplete %q: want the missing manifest named", cut.Incomplete)
	}
}
