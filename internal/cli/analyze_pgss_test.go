package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// TestAnalyzeMatchesPgStatStatements is the log reader's acceptance test:
// on a log captured from a real server running pgbench in all three
// protocols plus an application with multi-line statements, odd parameters,
// transactions, errors and connection churn, the successful calls analyze
// counts per fingerprint (calls - errors) equal the server's own
// pg_stat_statements.calls, in each of the three log formats.
func TestAnalyzeMatchesPgStatStatements(t *testing.T) {
	parallelCase(t)
	ctx := context.Background()
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: workload.LogSettings()})
	// The extension and the reset are logged but happen before the count
	// starts: they are the only statements pg_stat_statements must miss.
	mustExec(t, c, "postgres", "CREATE EXTENSION pg_stat_statements")
	mustExec(t, c, "postgres", "SELECT pg_stat_statements_reset()")
	sum, err := workload.Run(ctx, c, workload.Options{Duration: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// pg_stat_statements of PostgreSQL 15 counts a utility statement run
	// as a named prepared statement only on its first execution (checked
	// by hand: pgbench -M prepared -t 100 -c 1 leaves BEGIN and END at 1
	// call), so pgbench -M prepared's BEGIN and END are undercounted by
	// the server, by one less than the transactions of each client.
	var undercount int64
	for _, run := range sum.Pgbench {
		if run.Mode == "prepared" {
			undercount += run.Transactions - int64(run.Clients)
		}
	}
	utility := map[string]bool{
		fingerprint.Compute("BEGIN")[0].Fingerprint: true,
		fingerprint.Compute("END")[0].Fingerprint:   true,
	}
	server := pgssCalls(ctx, t, c)
	if err := c.StopServer(); err != nil {
		t.Fatal(err)
	}
	excluded := fingerprintSet("CREATE EXTENSION pg_stat_statements", "SELECT pg_stat_statements_reset()", pgssQuery)

	for _, pattern := range []string{"*.log", "*.csv", "*.json"} {
		t.Run(pattern, func(t *testing.T) {
			files, err := c.LogFiles(pattern)
			if err != nil || len(files) != 1 {
				t.Fatalf("log files %v: %v", files, err)
			}
			logged := analyzeCalls(t, files[0])
			foldPrepared(t, logged)
			// The workload sends "SELECT 1; SELECT 1/0; SELECT 3": the log
			// says the string failed, not which of its statements, and
			// analyze puts the error on the last one, so "SELECT 1/0"
			// looks like it succeeded once.
			if fp := fingerprint.Compute("SELECT 1/0")[0].Fingerprint; logged[fp].ok == server[fp].calls+1 {
				cc := logged[fp]
				cc.ok--
				logged[fp] = cc
			}
			checkPgssCalls(t, logged, server, excluded, func(fp string, calls int64) int64 {
				if utility[fp] {
					return calls + undercount
				}
				return calls
			}, 20, "the workload")
		})
	}
}

const pgssQuery = "SELECT query, calls FROM pg_stat_statements"

// checkPgssCalls compares analyze's successful calls (logged) with the
// server's (server) by fingerprint, but for those excluded: each must be
// want(fp, the server's calls), and none counted that the server did
// not count. Fewer than least compared is what (the workload) not run.
func checkPgssCalls(t *testing.T, logged, server map[string]callCount, excluded map[string]bool, want func(fp string, calls int64) int64, least int, what string) {
	t.Helper()
	checked := 0
	for fp, n := range server {
		if excluded[fp] {
			continue
		}
		if w := want(fp, n.calls); logged[fp].ok != w {
			t.Errorf("%s: analyze counts %d successful calls, pg_stat_statements %d (expected %d): %s", fp, logged[fp].ok, n.calls, w, n.query)
		}
		checked++
	}
	for fp, n := range logged {
		if _, ok := server[fp]; !ok && n.ok > 0 && !excluded[fp] {
			t.Errorf("%s: analyze counts %d successful calls the server did not: %s", fp, n.ok, n.query)
		}
	}
	if checked < least {
		t.Errorf("only %d queries compared: %s did not run", checked, what)
	}
}

type callCount struct {
	calls, ok int64
	query     string
}

// fingerprintSet is the set of the fingerprints of queries.
func fingerprintSet(queries ...string) map[string]bool {
	set := map[string]bool{}
	for _, q := range queries {
		set[fingerprint.Compute(q)[0].Fingerprint] = true
	}
	return set
}

// checkSameCalls fails the test for every query whose calls in replayed
// differ from original's, by fingerprint, those excluded aside (either
// side's), and when fewer than least queries of original were compared.
func checkSameCalls(t *testing.T, original, replayed map[string]callCount, excluded map[string]bool, least int) {
	t.Helper()
	checked := 0
	var diffs []string
	for fp, n := range original {
		if excluded[fp] {
			continue
		}
		if got := replayed[fp].calls; got != n.calls {
			diffs = append(diffs, fmtDiff(fp, n.calls, got, n.query))
		}
		checked++
	}
	for fp, n := range replayed {
		if _, ok := original[fp]; !ok && !excluded[fp] {
			diffs = append(diffs, fmtDiff(fp, 0, n.calls, n.query))
		}
	}
	sort.Strings(diffs)
	for _, d := range diffs {
		t.Error(d)
	}
	if checked < least {
		t.Errorf("only %d queries compared: the workload did not run", checked)
	}
}

// pgssCalls sums pg_stat_statements calls by the fingerprint of its text.
func pgssCalls(ctx context.Context, t *testing.T, c *pgcluster.Cluster) map[string]callCount {
	conn := pgclustertest.Connect(ctx, t, c.DSN("postgres"))
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, pgssQuery, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]callCount{}
	for rows.Next() {
		var q string
		var calls int64
		if err := rows.Scan(&q, &calls); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(q, "pgrehearse-observe") {
			continue // replay --observe's own statements
		}
		// The server files executions of a prepared statement under the
		// text of its PREPARE; count them under the prepared query.
		if inner, ok := preparedQuery(q); ok {
			q = inner
		}
		for _, it := range fingerprint.Compute(q) {
			cc := out[it.Fingerprint]
			cc.calls += calls
			cc.query = q
			out[it.Fingerprint] = cc
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// analyzeCalls runs "pgrehearse analyze --json" on path and returns the
// successful calls per fingerprint.
func analyzeCalls(t *testing.T, path string) map[string]callCount {
	dir, err := os.MkdirTemp("", "pgss")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "analysis.json")
	var stdout, stderr bytes.Buffer
	if code := Run(context.Background(), IO{Stdout: &stdout, Stderr: &stderr}, []string{"analyze", "--json", out, path}); code != ExitOK {
		t.Fatalf("analyze exited %d: %s", code, stderr.String())
	}
	b := readFile(t, out)
	var res struct {
		Lines struct {
			Total, Parsed int64
			Skipped       map[string]int64
		}
		Queries []struct {
			Fingerprint   string
			Query         string
			Calls, Errors int64
		}
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	var skipped int64
	for _, n := range res.Lines.Skipped {
		skipped += n
	}
	if res.Lines.Total == 0 || res.Lines.Total != res.Lines.Parsed+skipped {
		t.Errorf("lines: total %d != parsed %d + skipped %d", res.Lines.Total, res.Lines.Parsed, skipped)
	}
	m := map[string]callCount{}
	for _, q := range res.Queries {
		m[q.Fingerprint] = callCount{calls: q.Calls, ok: q.Calls - q.Errors, query: q.Query}
	}
	return m
}

// preparedQuery returns the query of "PREPARE name [(types)] AS query".
func preparedQuery(q string) (string, bool) {
	if !strings.HasPrefix(strings.ToUpper(q), "PREPARE ") {
		return "", false
	}
	_, inner, ok := strings.Cut(q, " AS ")
	return inner, ok
}

// foldPrepared makes analyze's counts comparable with the server's for
// SQL-level prepared statements: pg_stat_statements counts neither PREPARE
// nor DEALLOCATE, and counts each EXECUTE as a call of the prepared query.
func foldPrepared(t *testing.T, logged map[string]callCount) {
	inner := map[string]string{} // statement name -> fingerprint of its query
	for fp, cc := range logged {
		if q, ok := preparedQuery(cc.query); ok {
			name := strings.Fields(cc.query)[1]
			inner[name] = fingerprint.Compute(q)[0].Fingerprint
			delete(logged, fp)
		}
	}
	for fp, cc := range logged {
		upper := strings.ToUpper(cc.query)
		switch {
		case strings.HasPrefix(upper, "DEALLOCATE "):
			delete(logged, fp)
		case strings.HasPrefix(upper, "EXECUTE "):
			name, _, _ := strings.Cut(strings.Fields(cc.query)[1], "(")
			target, ok := inner[name]
			if !ok {
				t.Errorf("EXECUTE of %q, which the log never prepared", name)
				continue
			}
			to := logged[target]
			to.ok += cc.ok
			logged[target] = to
			delete(logged, fp)
		}
	}
}
