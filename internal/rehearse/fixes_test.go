package rehearse

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/fixes"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/reset"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/rounds"
)

// hasIndex reports whether index exists in database db of dsn's server.
func hasIndex(t *testing.T, dsn, index string) bool {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Errorf("hasIndex: %v", err)
		return false
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_indexes WHERE indexname = $1", index).Scan(&n); err != nil {
		t.Errorf("hasIndex: %v", err)
	}
	return n > 0
}

// setting is a setting's value in a new session of dsn.
func setting(t *testing.T, dsn, name string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Errorf("setting: %v", err)
		return ""
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err != nil {
		t.Errorf("setting: %v", err)
	}
	return v
}

// TestFixRounds: after the rounds, the resets stay prepared (KeepResets),
// each fix's rounds start from the reset state with its SQL applied to
// the round's copy (and only there), replay the whole traffic and are
// written and indexed apart from the comparison's rounds; a fix the
// server refuses (a unique index over duplicates) is not tried, with the
// server's error, and the next fix still runs; a setting's fix holds for
// the sessions of its rounds' copies only. The fix's verdict compares
// the writes of its table with the candidate's rounds without it, and
// the resets are closed at the end. The fix rounds run in turn with
// control rounds (control, the fixes, then the fixes in reverse,
// control), which the fixes are judged against: they are written and
// indexed apart from the comparison's rounds, named in the progress, and
// each fix names them; the progress counts the refused fix's rounds out.
func TestFixRounds(t *testing.T) {
	functionalCase(t)
	logPath := capturedLog(t)
	ctl, cand := target(t), target(t)
	dbs := []string{appDB}
	const good = "items_n_idx"
	// The fix's index exists in the copies of its rounds only.
	seen := map[int]bool{}
	workMem := map[int]string{}
	cfg := templateConfig(ctl, cand, dbs, logPath, func(round Round, tg Target) {
		if round.Side == Candidate {
			seen[round.Seq] = hasIndex(t, cand.DSN(dbOf(round)), good)
			workMem[round.Seq] = setting(t, cand.DSN(dbOf(round)), "work_mem")
		}
	})
	cfg.Dir = t.TempDir()
	names, of := map[int]string{}, map[int]int{}
	cfg.Progress = func(p Progress) {
		if p.Phase == rounds.PhaseReset {
			names[p.Round.Seq], of[p.Round.Seq] = p.Round.Name(), p.Round.Of
		}
	}
	ctx := context.Background()
	out, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	defer out.CloseResets(ctx)
	before, err := Compare(out, judge.Options{MinCalls: 5})
	if err != nil {
		t.Fatal(err)
	}
	planned := []fixes.Fix{
		{Name: "index-items_n_key", Kind: fixes.CreateIndex, SQL: "CREATE UNIQUE INDEX items_n_key ON items (n)", Databases: []string{appDB}, Relation: "items"},
		{Name: "index-" + good, Kind: fixes.CreateIndex, SQL: "CREATE INDEX " + good + " ON items (n)", Databases: []string{appDB}, Relation: "items"},
		{Name: "setting-work_mem", Kind: fixes.SetDatabase, Setting: "work_mem", Value: "7MB", Databases: []string{appDB}},
	}
	if err := RunFixes(ctx, cfg, out, planned, 2, Control); err != nil {
		t.Fatalf("RunFixes: %v", err)
	}
	if len(out.Fixes) != 3 {
		t.Fatalf("fixes run: %+v", out.Fixes)
	}
	bad, ok := out.Fixes[0], out.Fixes[1]
	if !strings.Contains(bad.NotApplied, "could not create unique index") || len(bad.Results) != 0 || len(bad.Files) != 0 {
		t.Errorf("the refused fix: not applied %q, %d results", bad.NotApplied, len(bad.Results))
	}
	if ok.NotApplied != "" || len(ok.Results) != 2 || len(ok.Files) != 2 {
		t.Fatalf("the fix: not applied %q, files %v", ok.NotApplied, ok.Files)
	}
	for _, f := range ok.Files {
		if !strings.Contains(f, "-candidate-fix-index-"+good+".json") {
			t.Errorf("fix round file %s", f)
		}
		if _, err := os.Stat(filepath.Join(cfg.Dir, f)); err != nil {
			t.Error(err)
		}
	}
	// Round 2 is the candidate's own; 3 the control's beside the fixes;
	// 4 the refused fix's (no replay); 5 the index's, 6 and 7 the
	// setting's, 8 the index's, 9 the control's beside them.
	if seen[2] || len(seen) != 5 || !seen[5] || !seen[8] || seen[6] || seen[7] {
		t.Errorf("the index in the candidate's rounds (by seq): %v; want in the fix's rounds only", seen)
	}
	// The setting's fix: the control's value for the copy's sessions,
	// in its rounds only.
	if workMem[2] != "4MB" || workMem[5] != "4MB" || workMem[6] != "7MB" || workMem[7] != "7MB" || workMem[8] != "4MB" || out.Fixes[2].NotApplied != "" {
		t.Errorf("work_mem in the candidate's rounds (by seq): %v, not applied %q", workMem, out.Fixes[2].NotApplied)
	}
	wantNames := map[int]string{3: "control 2 beside the fix rounds", 4: "candidate 2 with fix index-items_n_key", 5: "candidate 3 with fix index-" + good,
		6: "candidate 4 with fix setting-work_mem", 7: "candidate 5 with fix setting-work_mem", 8: "candidate 6 with fix index-" + good, 9: "control 3 beside the fix rounds"}
	for seq, want := range wantNames {
		if names[seq] != want {
			t.Errorf("round %d named %q in the progress, want %q", seq, names[seq], want)
		}
	}
	// Ten rounds in all until the fix was refused, nine after.
	if of[3] != 10 || of[5] != 9 || of[9] != 9 {
		t.Errorf("rounds in all in the progress (by seq): %v", of)
	}
	for _, fr := range out.Fixes[1:] {
		if !slices.Equal(fr.Beside, []int{3, 9}) || len(fr.BesideResults) != 2 || fr.BesideSide != Control {
			t.Errorf("fix %s: beside rounds %v (%d results, %s), want the control's 3 and 9", fr.Name, fr.Beside, len(fr.BesideResults), fr.BesideSide)
		}
	}
	var beside []int
	for _, rec := range out.Records {
		if rec.Beside {
			beside = append(beside, rec.Seq)
			if rec.Side != Control || rec.Status != StatusDone || rec.File != fmt.Sprintf("round-%02d-control-beside-fixes.json", rec.Seq) {
				t.Errorf("beside round %+v", rec)
			}
			if _, err := os.Stat(filepath.Join(cfg.Dir, rec.File)); err != nil {
				t.Error(err)
			}
		}
	}
	if !slices.Equal(beside, []int{3, 9}) {
		t.Errorf("beside rounds in the index: %v", beside)
	}
	if hasIndex(t, cand.DSN(appDB), good) {
		t.Errorf("the fix reached the candidate's own %s, not only the copies", appDB)
	}
	var fixRecs int
	for _, rec := range out.Records {
		if rec.Fix != "" {
			fixRecs++
		}
	}
	if fixRecs != 5 {
		t.Errorf("%d fix records in the index, want 5 (the refused one's and two rounds of two): %+v", fixRecs, out.Records)
	}
	read, err := ReadOutcome(cfg.Dir)
	if err != nil || len(read.Control) != 1 || len(read.Candidate) != 1 || len(read.Fixes) != 3 {
		t.Errorf("ReadOutcome: %v; %d control, %d candidate rounds (fix rounds are not the comparison's), %d fixes", err, len(read.Control), len(read.Candidate), len(read.Fixes))
	}

	judged, err := JudgeFixes(out, before, judge.Options{MinCalls: 5})
	if err != nil || len(judged) != 3 {
		t.Fatalf("JudgeFixes: %v, %+v", err, judged)
	}
	if judged[0].Status != fixes.NotTried || judged[0].NotApplied == "" {
		t.Errorf("the refused fix's verdict: %+v", judged[0])
	}
	if j := judged[1]; !slices.Equal(j.ControlRounds, []int{3, 9}) {
		t.Errorf("the fix was judged against the control's rounds %v, want those run beside it, 3 and 9", j.ControlRounds)
	}
	if j := judged[1]; j.Status == fixes.NotTried || j.Rounds != 2 || len(j.Writes) < 3 {
		t.Errorf("the fix's verdict: %s, %d rounds, writes %+v; want the insert, update and delete of items", j.Status, j.Rounds, j.Writes)
	} else {
		for _, w := range j.Writes {
			if w.Mean == nil {
				t.Errorf("write %q without its figure", w.Query)
			}
		}
	}
	if err := out.CloseResets(ctx); err != nil {
		t.Fatal(err)
	}
	if left := resetLeftovers(t, ctl) + resetLeftovers(t, cand); left != 0 {
		t.Errorf("%d databases of the resets left after CloseResets", left)
	}
}

// autoConf is what the server's postgresql.auto.conf sets name to, ""
// when it does not.
func autoConf(t *testing.T, dsn, name string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Errorf("autoConf: %v", err)
		return ""
	}
	defer conn.Close(ctx)
	var v string
	err = conn.QueryRow(ctx, `SELECT coalesce(max(setting), '') FROM pg_file_settings WHERE name = $1 AND sourcefile LIKE '%postgresql.auto.conf'`, name).Scan(&v)
	if err != nil {
		t.Errorf("autoConf: %v", err)
	}
	return v
}

// TestFixRoundsServerSetting: a setting a reload applies is set for the
// server by ALTER SYSTEM and a reload, seen by its rounds' sessions and
// by no other round's, and put back after each of its rounds: the
// candidate's own value in postgresql.auto.conf (ALTER SYSTEM SET of
// it), or none (ALTER SYSTEM RESET). A value the server refuses is not
// tried, with the server's error, and changes nothing.
func TestFixRoundsServerSetting(t *testing.T) {
	functionalCase(t)
	logPath := capturedLog(t)
	ctl, cand := target(t), target(t)
	ctx := context.Background()
	// The candidate's own change, in its postgresql.auto.conf.
	for _, sql := range []string{"ALTER SYSTEM SET checkpoint_timeout = '6min'", "SELECT pg_reload_conf()"} {
		pgclustertest.Exec(t, cand, "postgres", sql)
	}
	for setting(t, cand.DSN("postgres"), "checkpoint_timeout") != "6min" {
		if t.Failed() {
			t.FailNow()
		}
	}
	dbs := []string{appDB}
	ckpt, wwd := map[int]string{}, map[int]string{}
	cfg := templateConfig(ctl, cand, dbs, logPath, func(round Round, tg Target) {
		if round.Side == Candidate {
			ckpt[round.Seq] = setting(t, cand.DSN(dbOf(round)), "checkpoint_timeout")
			wwd[round.Seq] = setting(t, cand.DSN(dbOf(round)), "wal_writer_delay")
		}
	})
	out, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	defer out.CloseResets(ctx)
	planned := []fixes.Fix{
		{Name: "setting-checkpoint_timeout", Kind: fixes.SetServer, Setting: "checkpoint_timeout", Value: "7min", SQL: `ALTER SYSTEM SET "checkpoint_timeout" = '7min'`, Databases: dbs},
		{Name: "setting-wal_writer_delay", Kind: fixes.SetServer, Setting: "wal_writer_delay", Value: "300ms", SQL: `ALTER SYSTEM SET "wal_writer_delay" = '300ms'`, Databases: dbs},
		{Name: "setting-bad", Kind: fixes.SetServer, Setting: "checkpoint_timeout", Value: "banana", SQL: `ALTER SYSTEM SET "checkpoint_timeout" = 'banana'`, Databases: dbs},
	}
	if err := RunFixes(ctx, cfg, out, planned, 1, Control); err != nil {
		t.Fatalf("RunFixes: %v", err)
	}
	// Round 2 is the candidate's own, 3 the control's beside the fixes,
	// 4 and 5 the settings', 6 the refused one's (no replay).
	if ckpt[2] != "6min" || ckpt[4] != "7min" || ckpt[5] != "6min" || len(ckpt) != 3 {
		t.Errorf("checkpoint_timeout in the candidate's rounds (by seq): %v", ckpt)
	}
	if wwd[2] != "200ms" || wwd[4] != "200ms" || wwd[5] != "300ms" {
		t.Errorf("wal_writer_delay in the candidate's rounds (by seq): %v", wwd)
	}
	for i, fr := range out.Fixes[:2] {
		if fr.NotApplied != "" || len(fr.Results) != 1 {
			t.Errorf("fix %d: not applied %q, %d results", i, fr.NotApplied, len(fr.Results))
		}
	}
	if bad := out.Fixes[2]; !strings.Contains(bad.NotApplied, "invalid value for parameter") || len(bad.Results) != 0 {
		t.Errorf("the refused setting: not applied %q, %d results", bad.NotApplied, len(bad.Results))
	}
	// As the candidate was: its own line back, and none added.
	dsn := cand.DSN("postgres")
	if got := autoConf(t, dsn, "checkpoint_timeout"); got != "6min" || setting(t, dsn, "checkpoint_timeout") != "6min" {
		t.Errorf("checkpoint_timeout after the fix rounds: postgresql.auto.conf %q, in a session %q; want the candidate's own 6min", got, setting(t, dsn, "checkpoint_timeout"))
	}
	if got := autoConf(t, dsn, "wal_writer_delay"); got != "" || setting(t, dsn, "wal_writer_delay") != "200ms" {
		t.Errorf("wal_writer_delay after the fix rounds: postgresql.auto.conf %q, in a session %q; want none, the default", got, setting(t, dsn, "wal_writer_delay"))
	}
	for _, rec := range out.Records {
		if rec.Fix != "" && rec.Fix != "setting-bad" && (rec.Status != StatusDone || rec.Error != "") {
			t.Errorf("fix round %+v", rec)
		}
	}
}

// TestFixRoundsRestart: under a reset that restarts the server (the data
// directory's), a setting that needs a restart is set by ALTER SYSTEM and
// a restart for its round, seen by its round's sessions only, and put
// back after it; under a template reset, which cannot restart, it is not
// tried, with why.
func TestFixRoundsRestart(t *testing.T) {
	functionalCase(t)
	logPath := capturedLog(t)
	ctl, cand := target(t), target(t)
	ctx := context.Background()
	locks := map[int]string{}
	cfg := Config{
		Control: Target{DSN: ctl.DSN("postgres"), Reset: &reset.DataDir{Cluster: ctl}, Logs: []string{filepath.Join(ctl.LogDir(), "*.log")}},
		Candidate: Target{DSN: cand.DSN("postgres"), Reset: &reset.DataDir{Cluster: cand},
			Logs: []string{filepath.Join(cand.LogDir(), "*.log")}},
		Rounds:     1,
		KeepResets: true,
		Replay: realReplay(logPath, func(round Round, tg Target) {
			if round.Side == Candidate {
				locks[round.Seq] = setting(t, cand.DSN(appDB), "max_locks_per_transaction")
			}
		}),
	}
	out, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	defer out.CloseResets(ctx)
	named := fixes.Fix{Name: "setting-max_locks_per_transaction", Kind: fixes.SetServer, Setting: "max_locks_per_transaction", Value: "128",
		SQL: `ALTER SYSTEM SET "max_locks_per_transaction" = '128'`, Databases: []string{appDB}, Untried: fixes.UntriedRestart}
	planned := fixes.WithRestart([]fixes.Fix{named})
	if planned[0].Untried != "" || !planned[0].Restart || named.Restart {
		t.Fatalf("WithRestart: %+v (from %+v)", planned[0], named)
	}
	if err := RunFixes(ctx, cfg, out, planned, 1, Control); err != nil {
		t.Fatalf("RunFixes: %v", err)
	}
	// Its round read the server-side durations from the log the
	// restart left.
	if fr := out.Fixes[0]; fr.NotApplied != "" || len(fr.Results) != 1 || fr.Results[0].LatencySource != results.LatencyServerLog {
		t.Errorf("the fix: not applied %q, %d results %+v", fr.NotApplied, len(fr.Results), fr.Results)
	}
	// Round 3 is the control's beside the fix.
	if locks[2] != "64" || locks[4] != "128" || len(locks) != 2 {
		t.Errorf("max_locks_per_transaction in the candidate's rounds (by seq): %v", locks)
	}
	if got := autoConf(t, cand.DSN("postgres"), "max_locks_per_transaction"); got != "" || setting(t, cand.DSN("postgres"), "max_locks_per_transaction") != "64" {
		t.Errorf("after the fix rounds: postgresql.auto.conf %q, in a session %q; want none, 64", got, setting(t, cand.DSN("postgres"), "max_locks_per_transaction"))
	}
	// A reset that cannot restart: the fix is not applied, and why.
	undo, err := rounds.ApplyChange(ctx, cand.DSN("postgres"), reset.None{}, rounds.Place{}, planned[0])
	if undo != nil || err == nil || !strings.Contains(err.Error(), "needs a restart of the server, which this reset cannot make") {
		t.Errorf("ApplyChange without a restart: %v", err)
	}
}

// TestFixRoundsInterrupted: Ctrl-C during the control's round beside the
// fix rounds keeps the rounds finished (the fix's, the first control
// round beside it) in the index and in the fix's results, says so in
// RunFixes' error, and leaves the rehearsal's own rounds as they ended:
// not interrupted, nothing stopped them.
func TestFixRoundsInterrupted(t *testing.T) {
	functionalCase(t)
	logPath := capturedLog(t)
	ctl, cand := target(t), target(t)
	dbs := []string{appDB}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := templateConfig(ctl, cand, dbs, logPath, func(round Round, tg Target) {
		// The last round, the control's beside the fix: Ctrl-C.
		if round.Beside && round.Seq == 6 {
			cancel()
		}
	})
	cfg.Dir = t.TempDir()
	out, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	defer out.CloseResets(context.Background())
	fix := fixes.Fix{Name: "index-items_n_idx", Kind: fixes.CreateIndex, SQL: "CREATE INDEX items_n_idx ON items (n)", Databases: dbs, Relation: "items"}
	err = RunFixes(ctx, cfg, out, []fixes.Fix{fix}, 2, Control)
	if err == nil || !strings.Contains(err.Error(), "interrupted during round 6") {
		t.Errorf("RunFixes = %v, want the interruption of round 6", err)
	}
	if out.Interrupted || out.Stopped != "" {
		t.Errorf("the rehearsal's own rounds: interrupted %v, stopped %q; want as they ended", out.Interrupted, out.Stopped)
	}
	fr := out.Fixes[0]
	if len(fr.Results) != 2 || !slices.Equal(fr.Beside, []int{3}) || len(fr.BesideResults) != 1 {
		t.Errorf("the fix: %d results, beside %v (%d results); want its 2 rounds and the control's round 3", len(fr.Results), fr.Beside, len(fr.BesideResults))
	}
	read, rerr := ReadOutcome(cfg.Dir)
	if rerr != nil {
		t.Fatal(rerr)
	}
	status := map[int]Status{}
	for _, rec := range read.Records {
		status[rec.Seq] = rec.Status
	}
	if status[3] != StatusDone || status[4] != StatusDone || status[5] != StatusDone || status[6] != StatusInterrupted || len(read.Control) != 1 ||
		len(read.Fixes) != 1 || !slices.Equal(read.Fixes[0].Beside, []int{3}) || len(read.Fixes[0].Files) != 2 {
		t.Errorf("the index: statuses %v, %d control rounds, fixes %+v", status, len(read.Control), read.Fixes)
	}
	before, err := Compare(out, judge.Options{MinCalls: 5})
	if err != nil {
		t.Fatal(err)
	}
	judged, jerr := JudgeFixes(out, before, judge.Options{MinCalls: 5})
	if jerr != nil || len(judged) != 1 || !slices.Equal(judged[0].ControlRounds, []int{3}) {
		t.Errorf("JudgeFixes: %v, %+v; want the fix judged against round 3", jerr, judged)
	}
}

// templateConfig is a rehearsal of logPath with one round a side, each
// target reset from its template copies of dbs and kept for the fix
// rounds; at calls back before each round's replay.
func templateConfig(ctl, cand *pgcluster.Cluster, dbs []string, logPath string, at func(Round, Target)) Config {
	return Config{
		Control:    Target{DSN: ctl.DSN("postgres"), Reset: &reset.Template{DSN: ctl.DSN("postgres"), Databases: dbs}},
		Candidate:  Target{DSN: cand.DSN("postgres"), Reset: &reset.Template{DSN: cand.DSN("postgres"), Databases: dbs}},
		Rounds:     1,
		KeepResets: true,
		Replay:     realReplay(logPath, at),
	}
}
