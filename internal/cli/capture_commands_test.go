package cli

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	capturefile "github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/rehearse"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// Every command that reads a log reads a capture of the proxy as well,
// detected by source.Open: one small capture of pgbench, and each command
// run on it end to end against real servers.

// benchDB is the database the capture's pgbench runs in; benchTx the
// transactions of each of its two clients.
const (
	benchDB = "bench"
	benchTx = 300
)

// benchInit makes c's bench database as pgbench -i leaves it: the state
// the capture starts from, and every replay's target.
func benchInit(t *testing.T, c *pgcluster.Cluster) {
	t.Helper()
	ctx := context.Background()
	mustExec(t, c, "postgres", "DROP DATABASE IF EXISTS "+benchDB+" WITH (FORCE)", "CREATE DATABASE "+benchDB)
	if out, err := c.Pgbench(ctx, "-i", "-q", "-s", "1", benchDB); err != nil {
		t.Fatalf("pgbench -i: %v\n%s", err, out)
	}
}

// benchState is what pgbench's transactions change: the history's rows
// and the balances, each table's as one md5 of its ordered rows.
func benchState(t *testing.T, c *pgcluster.Cluster) string {
	t.Helper()
	return benchStateOf(t, c, benchDB)
}

// benchStateOf is benchState of another database than benchDB.
func benchStateOf(t *testing.T, c *pgcluster.Cluster, db string) string {
	t.Helper()
	return strings.Join(queryLines(t, c, db, `SELECT
		(SELECT count(*) FROM pgbench_history) || ' ' ||
		(SELECT md5(string_agg(tid || ':' || bid || ':' || aid || ':' || delta, ',' ORDER BY tid, bid, aid, delta)) FROM pgbench_history) || ' ' ||
		(SELECT md5(string_agg(aid || ':' || abalance, ',' ORDER BY aid)) FROM pgbench_accounts) || ' ' ||
		(SELECT md5(string_agg(tid || ':' || tbalance, ',' ORDER BY tid)) FROM pgbench_tellers) || ' ' ||
		(SELECT md5(string_agg(bid || ':' || bbalance, ',' ORDER BY bid)) FROM pgbench_branches)`), "")
}

// TestCaptureEveryCommand captures pgbench (the prepared protocol, 2
// clients) through the proxy once, then runs analyze (in one part and
// in several), events, findings, replay, plan with a sharded replay and
// its merge, rehearse and sweep --log on the capture directory: each
// reads it whole, counts what the capture holds, and the replays end
// with the original's tables.
func TestCaptureEveryCommand(t *testing.T) {
	slowCase(t, 15*time.Second)
	ctx := context.Background()
	src := pgclustertest.StartT(t, pgcluster.Options{})
	benchInit(t, src)
	rc := startCapture(t, src.DSN(benchDB))
	if out, err := src.Pgbench(ctx, "-h", rc.host, "-p", rc.port, "-n", "-M", "prepared", "-c", "2", "-t", strconv.Itoa(benchTx), benchDB); err != nil {
		t.Fatalf("pgbench through the proxy: %v\n%s", err, out)
	}
	want := benchState(t, src)
	if code, out := rc.stop(t); code != ExitOK || !strings.Contains(out, ": complete") {
		t.Fatalf("capture exited %d, want a complete capture:\n%s", code, out)
	}
	m, err := capturefile.ReadManifest(rc.dir)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The transactions' statements: each of them once per transaction.
	perTx := map[string]int64{}
	for _, q := range []string{
		"UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
		"INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)",
	} {
		perTx[fingerprint.Compute(q)[0].Fingerprint] = 2 * benchTx
	}

	// analyze: every record read and used, the transactions counted.
	var analysis *results.Result
	for _, jobs := range []string{"1", "2"} {
		out := filepath.Join(dir, "analyze-"+jobs+".json")
		code, stdout, stderr := runCLI(ctx, "", "analyze", "-j", jobs, "--json", out, rc.dir)
		if code != ExitOK {
			t.Fatalf("analyze -j %s exited %d:\n%s%s", jobs, code, stdout, stderr)
		}
		res := readShardResult(t, out)
		if mc := res.Messages; mc == nil || mc.Total != m.Records || mc.Used+mc.SkippedTotal() != mc.Total || mc.Dropped != 0 {
			t.Errorf("analyze -j %s: messages %+v, want the capture's %d records", jobs, mc, m.Records)
		}
		if res.Lines != nil || strings.Contains(stdout, "lines ") {
			t.Errorf("analyze -j %s counts lines of a capture: %+v\n%s", jobs, res.Lines, stdout)
		}
		if res.Sessions.Total != m.Sessions || res.Statements.Failed != 0 {
			t.Errorf("analyze -j %s: sessions %+v, statements %+v; the capture has %d sessions", jobs, res.Sessions, res.Statements, m.Sessions)
		}
		checkCalls(t, "analyze -j "+jobs, res, perTx)
		if in := res.Input; !in.Known() || in.Files[0].Name != rc.dir {
			t.Errorf("analyze -j %s: input %+v, want the capture named by its size and hash", jobs, in)
		}
		if analysis == nil {
			analysis = res
		} else if analysis.Statements.Total != res.Statements.Total {
			t.Errorf("analyze -j 2: %d statements, -j 1: %d", res.Statements.Total, analysis.Statements.Total)
		}
	}
	statements := analysis.Statements.Total

	// events: the same sessions and statements, one JSON line each.
	code, stdout, stderr := runCLI(ctx, "", "events", rc.dir)
	if code != ExitOK {
		t.Fatalf("events exited %d:\n%s", code, stderr)
	}
	kinds := map[string]int64{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var ev struct{ Kind string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("events: %v: %s", err, line)
		}
		kinds[ev.Kind]++
	}
	if kinds["connect"] != m.Sessions || kinds["statement"]+kinds["execute"] != statements {
		t.Errorf("events %v: want %d connections and %d statements", kinds, m.Sessions, statements)
	}

	// findings: pgbench's history INSERTs, one row each, named.
	findingsOut := filepath.Join(dir, "findings.json")
	if code, stdout, stderr = runCLI(ctx, "", "findings", "--json", findingsOut, rc.dir); code != ExitOK {
		t.Fatalf("findings exited %d:\n%s%s", code, stdout, stderr)
	}
	var fs struct {
		Findings []struct {
			ID, Subject string
			Evidence    struct{ Queries []struct{ Calls int64 } }
		}
		Options struct {
			BatchMinRate float64 `json:"batch_min_rate"`
		}
	}
	if err := json.Unmarshal(readFile(t, findingsOut), &fs); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range fs.Findings {
		if f.ID == "batch-inserts" && f.Subject == "pgbench_history" && len(f.Evidence.Queries) == 1 && f.Evidence.Queries[0].Calls == 2*benchTx {
			found = true
		}
	}
	// The finding asks for a rate of single-row
	// INSERTs: on a machine busy enough that pgbench's 600 inserts took
	// longer than their 60 s, the rate is under it and the finding must
	// be absent (at load 35-50 the capture spanned more than that).
	rate := float64(2*benchTx) / analysis.SpanSeconds()
	if minRate := fs.Options.BatchMinRate; minRate <= 0 || found != (rate >= minRate) {
		t.Errorf("findings %+v: batch-inserts on pgbench_history with its %d calls found %v, at %.1f a second (the finding from %.0f)", fs.Findings, 2*benchTx, found, rate, minRate)
	} else if !found {
		t.Logf("pgbench's inserts came at %.1f a second, under the finding's %.0f: no finding, as it must", rate, minRate)
	}

	// replay: onto a copy of the state the capture started from, every
	// statement as recorded, and the original's tables at the end.
	target, candidate := pgclustertest.StartT(t, pgcluster.Options{}), pgclustertest.StartT(t, pgcluster.Options{})
	benchInit(t, target)
	code, text, one := runReplay(t, "--target", target.DSN("postgres"), "--speed", "0", "--findings=false", rc.dir)
	if code != ExitOK || one == nil {
		t.Fatalf("replay exited %d:\n%s", code, text)
	}
	if one.Statements.Executed != statements || one.Outcomes.AnswerDiffers != 0 || one.Outcomes.FailedOnlyOnTarget != 0 {
		t.Errorf("replay: statements %+v, outcomes %+v; want the %d statements executed as recorded", one.Statements, one.Outcomes, statements)
	}
	if got := benchState(t, target); got != want {
		t.Errorf("replay: the tables differ from the original's:\n got %s\nwant %s", got, want)
	}

	// plan, and the capture replayed in 2 shard processes by the plan:
	// merged, the shards executed what one process did.
	benchInit(t, target)
	plan := filepath.Join(dir, "plan.json")
	if code, out := runCmd(t, "plan", "--shards", "2", "--out", plan, rc.dir); code != ExitOK {
		t.Fatalf("plan exited %d:\n%s", code, out)
	}
	p := readPlan(t, plan)
	if len(p.Sessions) != int(m.Sessions) || len(p.Input.Files) != 1 || p.Input.Files[0].Hash != analysis.Input.Files[0].Hash {
		t.Errorf("plan: %d sessions, input %+v; want the capture's %d sessions and its hash %s", len(p.Sessions), p.Input, m.Sessions, analysis.Input.Files[0].Hash)
	}
	shards := filepath.Join(dir, "shards")
	if err := os.Mkdir(shards, 0o755); err != nil {
		t.Fatal(err)
	}
	merged := runAndMerge(t, 2, shards, "--shards", "2", "--plan", plan, "--target", target.DSN("postgres"), "--speed", "0", "--findings=false", rc.dir)
	if !sameStatements(merged.Statements, one.Statements) || merged.Outcomes.FailedOnlyOnTarget != 0 {
		t.Errorf("sharded replay merged: statements %+v, outcomes %+v; one process: %+v", merged.Statements, merged.Outcomes, one.Statements)
	}
	if mc := merged.Messages; mc == nil || mc.Total != m.Records {
		t.Errorf("sharded replay merged: messages %+v, want the capture's %d records once", mc, m.Records)
	}
	checkCalls(t, "sharded replay", merged, perTx)
	if got := benchState(t, target); got != want {
		t.Errorf("sharded replay: the tables differ from the original's:\n got %s\nwant %s", got, want)
	}

	// rehearse: a round a side, each from the state the capture started
	// from (template resets), each executing every statement.
	benchInit(t, target)
	benchInit(t, candidate)
	rounds := filepath.Join(dir, "rounds")
	code, stdout, stderr = runRehearse(t, "", "--control", target.DSN("postgres"), "--candidate", candidate.DSN("postgres"),
		"--rounds", "1", "--speed", "0", "--findings=false", "--out", rounds, rc.dir)
	if code != ExitOK {
		t.Fatalf("rehearse exited %d:\n%s%s", code, stdout, stderr)
	}
	back, err := rehearse.ReadOutcome(rounds)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Control) != 1 || len(back.Candidate) != 1 {
		t.Fatalf("rehearse kept %d control and %d candidate rounds", len(back.Control), len(back.Candidate))
	}
	for side, res := range map[results.Side]*results.Result{results.SideControl: back.Control[0], results.SideCandidate: back.Candidate[0]} {
		if !sameStatements(res.Statements, one.Statements) || res.Messages == nil || res.Outcomes.AnswerDiffers != 0 {
			t.Errorf("rehearse %s round: statements %+v, outcomes %+v; replay: %+v", side, res.Statements, res.Outcomes, one.Statements)
		}
	}
	if !strings.Contains(stderr, `the sessions use "`+benchDB+`"`) {
		t.Errorf("rehearse did not read the capture's database for its resets:\n%s", stderr)
	}

	// sweep --log: the capture's sessions and statements, replayed
	// again and again for a step.
	sweepOut := filepath.Join(dir, "sweep.json")
	var so, se bytes.Buffer
	code = Run(ctx, IO{Stdout: &so, Stderr: &se}, []string{"sweep", "--log", rc.dir, "--target", target.DSN(benchDB),
		"--clients", "2", "--warmup", "0s", "--duration", "1s", "--json", sweepOut})
	if code != ExitOK {
		t.Fatalf("sweep exited %d:\n%s%s", code, so.String(), se.String())
	}
	var sw struct {
		Workload struct {
			Kind, Format  string
			LogSessions   int64 `json:"log_sessions"`
			LogStatements int64 `json:"log_statements"`
		}
		Configs []struct {
			Steps []struct {
				Clients int
				TPS     float64
				Failed  int64
			}
		}
	}
	if err := json.Unmarshal(readFile(t, sweepOut), &sw); err != nil {
		t.Fatal(err)
	}
	if w := sw.Workload; w.Kind != "log" || w.Format != "capture" || w.LogSessions != m.Sessions || w.LogStatements != statements {
		t.Errorf("sweep workload %+v: want the capture's %d sessions and %d statements", w, m.Sessions, statements)
	}
	if len(sw.Configs) != 1 || len(sw.Configs[0].Steps) != 1 || sw.Configs[0].Steps[0].TPS <= 0 {
		t.Errorf("sweep steps %+v", sw.Configs)
	}
}

// checkCalls checks a result's calls of some queries, by fingerprint.
func checkCalls(t *testing.T, what string, res *results.Result, want map[string]int64) {
	t.Helper()
	got := map[string]int64{}
	for _, q := range res.Queries {
		got[q.Fingerprint] += q.Calls
	}
	for fp, n := range want {
		if got[fp] != n {
			t.Errorf("%s: %d calls of %s, want %d", what, got[fp], fp, n)
		}
	}
}

// TestCaptureDependentSessions is issue 36's acceptance item for
// synchronization: the orders workload (producers insert and commit,
// consumers ship each order once its producer committed, a foreign key
// between them) runs through the capture proxy; its capture, replayed
// with --sync onto an identical copy of the database as it was before,
// at the original pace and as fast as possible, fails no statement only
// on the target, answers every statement as the original did, and ends
// with the original's tables. The producers send the order's id as text,
// the consumers as a binary int8 (as pgx does), its type named in the
// INSERT and left to the server in the UPDATE (as pgx's and asyncpg's
// prepared statements do): the replay still orders them by row, the one
// key in each form.
func TestCaptureDependentSessions(t *testing.T) {
	parallelCase(t)
	ctx := context.Background()
	src := pgclustertest.StartT(t, pgcluster.Options{})
	freshShop(t, src)
	rc := startCapture(t, src.DSN(shardOrdersDB))
	runOrders(t, func(app string) *pgconn.PgConn {
		conn := pgclustertest.PgConn(ctx, t, rc.dsn(src.User(), shardOrdersDB)+" application_name="+app)
		return conn
	}, execBinary, 2, 2, 30, 20*time.Millisecond)
	want := shardOrdersState(t, src.DSN(shardOrdersDB))
	rc.stopOK(t)

	target := pgclustertest.StartT(t, pgcluster.Options{})
	for _, speed := range []string{"1", "0"} {
		t.Run("speed"+speed, func(t *testing.T) {
			freshShop(t, target)
			code, text, res := runReplay(t, "--target", target.DSN("postgres"), "--speed", speed, "--sync", "object", "--findings=false", rc.dir)
			if code != ExitOK || res == nil {
				t.Fatalf("replay exited %d:\n%s", code, text)
			}
			if o := res.Outcomes; o.FailedOnlyOnTarget != 0 || o.Ran == 0 || o.AnswerDiffers != 0 || o.Answered < res.Statements.Executed {
				t.Errorf("outcomes %+v: want every statement answered as recorded, none failed only on the target\n%s", o, text)
			}
			if res.Statements.Failed != 0 {
				t.Errorf("statements %+v: %v", res.Statements, res.ErrorsBySQLState)
			}
			if got := shardOrdersState(t, target.DSN(shardOrdersDB)); got != want {
				t.Errorf("final state differs from the original's:\n got %.120s\nwant %.120s", got, want)
			}
			if s := res.Sync; s == nil || s.Mode != "object" || s.Timeouts != 0 || s.ByRow == 0 || s.KeyNotLogged != 0 {
				t.Errorf("sync %+v: want every key read, binary ones too", s)
			}
			t.Logf("speed %s: %s", speed, syncSummary(res))
		})
	}
}

// sameStatements compares two replays' statement counts.
func sameStatements(a, b results.StatementCounts) bool {
	return a.Total == b.Total && a.Executed == b.Executed && a.Failed == b.Failed && a.SkippedTotal() == b.SkippedTotal()
}

// execBinary runs sql on conn as execArgs does, its arguments (integers)
// sent as binary int8 parameters: with their type in an INSERT, their
// type left to the server (which reads int8 from the bigint columns they
// meet) in other statements.
func execBinary(conn *pgconn.PgConn, sql string, args ...string) error {
	if len(args) == 0 {
		return execArgs(conn, sql)
	}
	typed := strings.HasPrefix(sql, "INSERT")
	bs := make([][]byte, len(args))
	oids := make([]uint32, len(args))
	for i, a := range args {
		n, err := strconv.ParseInt(a, 10, 64)
		if err != nil {
			return err
		}
		bs[i] = binary.BigEndian.AppendUint64(nil, uint64(n))
		if typed {
			oids[i] = 20
		}
	}
	return conn.ExecParams(context.Background(), sql, bs, oids, []int16{1}, nil).Read().Err
}
