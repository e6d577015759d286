package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	capturefile "github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/querystats"
)

// TestCaptureAnalyzeErrors: analyze of a capture counts every failed
// statement by its SQLSTATE, as it does a log's: a division by zero (in
// the simple and the extended protocol), a missing table and a
// statement the application cancelled (57014) add up to the failed
// statements. The same capture without its manifest (its proxy killed)
// is incomplete: exit 5, and the JSON says why.
func TestCaptureAnalyzeErrors(t *testing.T) {
	ctx, c := parallelServer(t)
	rc := startCapture(t, c.DSN("postgres"))
	conn := pgclustertest.Connect(ctx, t, rc.dsn(c.User(), "postgres"))
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
	direct := pgclustertest.Connect(ctx, t, c.DSN("postgres"))
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
	err := <-done
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "57014" {
		t.Fatalf("the cancelled statement: %v, want 57014", err)
	}
	conn.Close(ctx)
	rc.stopOK(t)

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
	b := readFile(t, out)
	if err := json.Unmarshal(b, &cut); err != nil {
		t.Fatal(err)
	}
	if len(cut.Incomplete) == 0 || !strings.Contains(strings.Join(cut.Incomplete, " "), "no manifest") {
		t.Errorf("incomplete %q: want the missing manifest named", cut.Incomplete)
	}
}

// queryAll runs sql with args on conn and reads its rows to the end;
// an error fails the test.
func queryAll(ctx context.Context, t testing.TB, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	if rows.Err() != nil {
		t.Fatalf("%s: %v", sql, rows.Err())
	}
}

// TestCaptureAnswerValues is the acceptance of answers compared by
// content: a workload through the proxy (pgx's extended protocol with
// binary results, and the simple protocol), replayed at speed 0 onto
// copies of its database as it was before. Onto an identical copy, no
// answer differs but those the statements' text explains (now(), a
// catalog's OIDs), apart from the unexplained; onto a copy where one
// value a sorted read returns was changed, "values" differ for that query
// and only for it; onto a copy whose sorted text column has another
// collation (C instead of ICU's root), for the query that sorts on it.
func TestCaptureAnswerValues(t *testing.T) {
	ctx, c := parallelServer(t)
	table := func(collation string) string {
		return `CREATE TABLE items (id int PRIMARY KEY, name text COLLATE "` + collation + `", qty int);
			INSERT INTO items VALUES (1, 'apple', 10), (2, 'Banana', 20), (3, 'cherry', 30), (4, 'Date', 40), (5, NULL, 50);`
	}
	createDatabases(t, c, map[string]string{
		"orig":     table("und-x-icu"),
		"same":     table("und-x-icu"),
		"changed":  table("und-x-icu") + "UPDATE items SET qty = 31 WHERE id = 3;",
		"collated": table("C"),
	})
	rc := startCapture(t, c.DSN("orig"))
	conn := pgclustertest.Connect(ctx, t, rc.dsn(c.User(), "orig"))
	const (
		byID      = "SELECT id, name, qty FROM items WHERE id > $1 ORDER BY id"
		byName    = "SELECT name FROM items ORDER BY name"
		unordered = "SELECT id FROM items WHERE qty < $1"
		count     = "SELECT count(*) FROM items"
		clock     = "SELECT now()"
		catalog   = "SELECT c.oid, c.relname FROM pg_class c WHERE c.relname = $1"
	)
	for range 2 {
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{byID, []any{int32(0)}},
			{byName, []any{pgx.QueryExecModeSimpleProtocol}},
			{unordered, []any{int32(100)}},
			{count, nil},
			{clock, nil},
			{catalog, []any{"items"}},
		} {
			queryAll(ctx, t, conn, q.sql, q.args...)
		}
	}
	conn.Close(ctx)
	rc.stopOK(t)

	explained := map[string]string{clock: "volatile_function: now()", catalog: "server_assigned: oid"}
	for _, tc := range []struct {
		db     string
		values string // the one query whose values differ, unexplained
	}{
		{"same", ""},
		{"changed", byID},
		{"collated", byName},
	} {
		_, text, res := runReplay(t, "--target", c.DSN(tc.db), "--database-map", "orig="+tc.db, "--speed", "0", "--findings=false", rc.dir)
		if res == nil {
			t.Fatalf("%s: no result:\n%s", tc.db, text)
		}
		byQuery := map[string]querystats.Row{}
		for _, q := range res.Queries {
			byQuery[q.Fingerprint] = q
		}
		for _, sql := range []string{byID, byName, unordered, count, clock, catalog} {
			q := byQuery[fingerprint.Compute(sql)[0].Fingerprint]
			if q.Answered != 2 {
				t.Errorf("%s, %s: %d calls compared, want 2", tc.db, sql, q.Answered)
			}
			want := map[string]int64{}
			if sql == tc.values || explained[sql] != "" {
				want["values"] = 2
			}
			if len(q.AnswerDiffers) != len(want) || q.AnswerDiffers["values"] != want["values"] {
				t.Errorf("%s, %s: answers differ %v, want %v", tc.db, sql, q.AnswerDiffers, want)
			}
			if q.AnswerCause != explained[sql] {
				t.Errorf("%s, %s: explained %q, want %q", tc.db, sql, q.AnswerCause, explained[sql])
			}
		}
		o := res.Outcomes
		// Values that differ on a copy that is not the start: the
		// target's data, in items (issue 59 item 3).
		wantData := int64(0)
		if tc.values != "" {
			wantData = 2
		}
		if o.AnswerDiffersUnexplained != 0 || o.AnswerDiffersTargetData != wantData || o.AnswerDiffersTargetDataByTable["public.items"] != wantData ||
			o.AnswerDiffersExplained["volatile_function"] != 2 || o.AnswerDiffersExplained["server_assigned"] != 2 {
			t.Errorf("%s: outcomes %+v: want %d of the target's data in public.items, 2 volatile, 2 server-assigned", tc.db, o, wantData)
		}
		if !strings.Contains(text, "explained by the statement's text") || !strings.Contains(text, "explained: volatile_function: now()") {
			t.Errorf("%s: the replay's text does not set the explained answers apart:\n%s", tc.db, text)
		}
		if tc.values != "" && !strings.Contains(text, "2 of 2 calls differ (values 2): "+strings.SplitN(fingerprint.Compute(tc.values)[0].Query, " ", 2)[0]) {
			t.Errorf("%s: the replay's text does not name the values differing:\n%s", tc.db, text)
		}
		t.Logf("%s:\n%s", tc.db, text)
	}
}

// TestCaptureAnswerTxidStatus pins the one unexplained answer of the
// regression suite's capture replay (hack/regress.sh, issue 46 item 5):
// its txid test asks txid_status of a transaction id an earlier
// txid_current() returned, which psql writes into the text. The replay
// asks the target about the original's id, which the target assigned to
// another transaction: here the original rolled it back ("aborted") and
// the target, whose ids run ahead, committed it. The answer differs, and
// its cause is the server-assigned id the statement reads, as it is for
// pg_xact_status. Onto a fresh target, whose ids are behind, the id is
// in the target's future and the statement fails there: that error's
// cause is the same id (a baked id, as the failures only on the target
// count it), not a race, as the regression suite's large objects' and
// REINDEX SCHEMA pg_temp_N's were labelled or left unexplained.
func TestCaptureAnswerTxidStatus(t *testing.T) {
	parallelCase(t)
	ctx := context.Background()
	a := pgclustertest.StartT(t, pgcluster.Options{})
	b := pgclustertest.StartT(t, pgcluster.Options{})
	fresh := pgclustertest.StartT(t, pgcluster.Options{})
	// advance commits transactions on c until its ids pass past (given
	// the first id it reads).
	advance := func(c *pgcluster.Cluster, past func(first int64) int64) {
		conn := pgclustertest.Connect(ctx, t, c.DSN("postgres"))
		defer conn.Close(ctx)
		var first int64
		if err := conn.QueryRow(ctx, "SELECT txid_current()").Scan(&first); err != nil {
			t.Fatal(err)
		}
		for next := first; next <= past(first); {
			if err := conn.QueryRow(ctx, "SELECT txid_current()").Scan(&next); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The original's ids run 50 ahead of the fresh target's.
	advance(a, func(first int64) int64 { return first + 50 })
	rc := startCapture(t, a.DSN("postgres"))
	conn := pgclustertest.Connect(ctx, t, rc.dsn(a.User(), "postgres"))
	var xid int64
	var status string
	_, err := conn.Exec(ctx, "BEGIN", pgx.QueryExecModeSimpleProtocol)
	if err == nil {
		err = conn.QueryRow(ctx, "SELECT txid_current()", pgx.QueryExecModeSimpleProtocol).Scan(&xid)
	}
	if err == nil {
		_, err = conn.Exec(ctx, "ROLLBACK", pgx.QueryExecModeSimpleProtocol)
	}
	if err == nil {
		// As psql's txid test does: the id written into the text.
		err = conn.QueryRow(ctx, fmt.Sprintf("SELECT txid_status(%d) AS rolledback", xid), pgx.QueryExecModeSimpleProtocol).Scan(&status)
	}
	if err != nil || status != "aborted" {
		t.Fatalf("txid_status of the rolled-back id: %q, %v", status, err)
	}
	conn.Close(ctx)
	rc.stopOK(t)
	// The target's ids run ahead of the original's, each committed.
	advance(b, func(int64) int64 { return xid + 10 })

	_, text, res := runReplay(t, "--target", b.DSN("postgres"), "--speed", "0", "--findings=false", rc.dir)
	if res == nil {
		t.Fatalf("no result:\n%s", text)
	}
	var q querystats.Row
	for _, r := range res.Queries {
		if r.Fingerprint == fingerprint.Compute("SELECT txid_status(1) AS rolledback")[0].Fingerprint {
			q = r
		}
	}
	if q.Answered != 1 || q.AnswerDiffers["values"] != 1 || q.AnswerCause != "server_assigned: txid_status()" {
		t.Errorf("txid_status: %d answered, differing %v, explained %q; want 1, values 1, server_assigned: txid_status()\n%s",
			q.Answered, q.AnswerDiffers, q.AnswerCause, text)
	}
	if o := res.Outcomes; o.AnswerDiffersUnexplained != 0 || o.FailedOnlyOnTarget != 0 {
		t.Errorf("outcomes %+v: want no unexplained answer, nothing failing only on the target\n%s", o, text)
	}

	_, text, res = runReplay(t, "--target", fresh.DSN("postgres"), "--speed", "0", "--findings=false", rc.dir)
	if res == nil {
		t.Fatalf("no result onto the fresh target:\n%s", text)
	}
	for _, r := range res.Queries {
		if r.Fingerprint == fingerprint.Compute("SELECT txid_status(1) AS rolledback")[0].Fingerprint {
			q = r
		}
	}
	if q.AnswerDiffers["error_only_on_target"] != 1 || q.AnswerCause != "server_assigned: an id the original's server assigned, in the statement" {
		t.Errorf("txid_status onto the fresh target: differing %v, explained %q; want error_only_on_target 1, the id\n%s", q.AnswerDiffers, q.AnswerCause, text)
	}
	if o := res.Outcomes; o.AnswerDiffersUnexplained != 0 || o.FailedOnlyOnTarget != 1 || o.OnlyOnTargetBakedIDs != 1 {
		t.Errorf("outcomes onto the fresh target %+v: want no unexplained answer, one baked id failing only on the target\n%s", o, text)
	}
}
