package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// The answers to a newcomer's mistakes: each says what is wrong in the
// user's terms, with its exit code.

// TestNotALogFile: a binary or foreign file given as the log is "not a
// PostgreSQL log", saying what it looks like, exit 1, for analyze and
// replay alike, and no escaped bytes of it are quoted.
func TestNotALogFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	elf := filepath.Join(dir, "pgrehearse")
	os.WriteFile(elf, append([]byte("\x7fELF\x02\x01\x01\x00\x00\x00"), make([]byte, 300)...), 0o644)
	lz4 := filepath.Join(dir, "postgresql.log.lz4")
	os.WriteFile(lz4, []byte("\x04\x22\x4d\x18\x64\x40\xa7\x00\x00\x00"), 0o644)
	// Random bytes, as a file of them (issue 57 item 5): a third of them
	// once reached the prefix inference and were quoted, escaped.
	random := filepath.Join(dir, "random.log")
	noise := make([]byte, 1500)
	for i := range noise {
		noise[i] = byte(i*i*7919 + i*104729 + 17)
	}
	os.WriteFile(random, noise, 0o644)
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("Deploy notes\nThe migration ran at 10:00 and took 4 minutes.\n"), 0o644)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"analyze random bytes", []string{"analyze", random}, "not a PostgreSQL log: it looks like binary data"},
		{"analyze random bytes, prefix given", []string{"analyze", "--prefix", "%m [%p] ", random}, "not a PostgreSQL log: it looks like binary data"},
		{"analyze text", []string{"analyze", notes}, "not a PostgreSQL log: it looks like text, but none of its first 2 lines holds a server message"},
		{"analyze ELF", []string{"analyze", elf}, "not a PostgreSQL log: it looks like an ELF binary"},
		{"replay ELF", []string{"replay", "--dry-run", elf}, "not a PostgreSQL log: it looks like an ELF binary"},
		{"analyze lz4", []string{"analyze", lz4}, "not a PostgreSQL log: it looks like lz4-compressed data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(ctx, "", tt.args...)
			if code != ExitFailure {
				t.Errorf("exit %d, want %d", code, ExitFailure)
			}
			if !strings.Contains(stderr, tt.want) || strings.Contains(stderr, `\x00`) || strings.Contains(stderr, "log_line_prefix") ||
				strings.Contains(stderr, "migration") || strings.ContainsFunc(stderr, func(r rune) bool { return r > 0x7e || r < 0x20 && r != '\n' }) {
				t.Errorf("message lacks %q, or quotes the file:\n%s", tt.want, stderr)
			}
		})
	}
}

// errorsOnlyLog is the log of a server at its default settings: it logs
// the statements that fail (log_min_error_statement), none that succeed.
const errorsOnlyLog = `2024-05-01 10:00:00.000 UTC [101] app@shop/psql 6630f1a0.65 ERROR:  relation "nope" does not exist at character 15
2024-05-01 10:00:00.000 UTC [101] app@shop/psql 6630f1a0.65 STATEMENT:  SELECT * FROM nope
2024-05-01 10:00:01.000 UTC [101] app@shop/psql 6630f1a0.65 ERROR:  division by zero
2024-05-01 10:00:01.000 UTC [101] app@shop/psql 6630f1a0.65 STATEMENT:  SELECT 1/0
`

// TestErrorsOnlyLog: a log with errors and no successful statement says
// the server logs none and how to make it, and exits 4 (nothing to
// measure), for analyze and replay, with no error-rate finding; the
// analysis is marked incomplete.
func TestErrorsOnlyLog(t *testing.T) {
	parallelCase(t)
	ctx := context.Background()
	dir := t.TempDir()
	log := filepath.Join(dir, "postgresql.log")
	os.WriteFile(log, []byte(errorsOnlyLog), 0o644)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	mustExec(t, c, "postgres", "CREATE ROLE app LOGIN", "CREATE DATABASE shop OWNER app")
	want := []string{"NOTHING MEASURED: all 2 statements the log shows failed: the server logs no successful statement",
		"log_min_error_statement", "log_min_duration_statement = 0 (or log_statement = 'all')"}
	tests := []struct {
		name string
		args []string
	}{
		{"analyze", []string{"analyze", "--prefix", testPrefix, log}},
		{"replay, dry run", []string{"replay", "--dry-run", "--prefix", testPrefix, log}},
		{"replay", []string{"replay", "--target", c.DSN("postgres"), "--speed", "0", "--prefix", testPrefix, log}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(ctx, "", tt.args...)
			if code != ExitNoInput {
				t.Errorf("exit %d, want %d", code, ExitNoInput)
			}
			for _, w := range want {
				if !strings.Contains(stderr, w) {
					t.Errorf("message lacks %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stdout, "CRITICAL") {
				t.Errorf("an error rate judged from errors alone:\n%s", stdout)
			}
		})
	}
	// One successful statement logged: measured as before.
	withOne := filepath.Join(dir, "one.log")
	os.WriteFile(withOne, []byte(errorsOnlyLog+"2024-05-01 10:00:02.000 UTC [101] app@shop/psql 6630f1a0.65 LOG:  duration: 0.100 ms  statement: SELECT 1\n"), 0o644)
	if code, _, stderr := runCLI(ctx, "", "analyze", "--prefix", testPrefix, withOne); code != ExitOK {
		t.Errorf("a log with a successful statement: exit %d\n%s", code, stderr)
	}
}

// TestUnknownConnectionKeyword: a misspelt keyword in any connection
// string flag of any command is refused before any work, naming the flag
// and the keyword as libpq does, exit 2; pgconn would have sent it to the
// server as a run-time parameter and connected to the default socket.
func TestUnknownConnectionKeyword(t *testing.T) {
	ctx := context.Background()
	all := dsnFlags()
	if len(all) < 5 {
		t.Fatalf("DSN flags in %d commands", len(all))
	}
	for cmd, flags := range all {
		for _, flag := range flags {
			for _, dsn := range []string{"hostname=127.0.0.1 port=1 dbname=app password=PlantedKW-1", "postgres://app:PlantedKW-1@127.0.0.1:1/app?hostname=x"} {
				t.Run(cmd+" --"+flag, func(t *testing.T) {
					args := []string{cmd, "--" + flag, dsn}
					if cmd != "capture" && cmd != "observe" && cmd != "sweep" {
						args = append(args, smallLog)
					}
					code, stdout, stderr := runCLI(ctx, "", args...)
					want := "pgrehearse: --" + flag + `: invalid connection option "hostname"`
					if code != ExitUsage || !strings.Contains(stderr, want) {
						t.Errorf("exit %d, want %d saying %q:\n%s%s", code, ExitUsage, want, stdout, stderr)
					}
					if strings.Contains(stdout+stderr, "PlantedKW-1") {
						t.Errorf("the password is printed:\n%s%s", stdout, stderr)
					}
				})
			}
		}
	}
}

// TestFlagTypo: a mistyped flag is a usage error (exit 2) that suggests
// the command's flags within two edits, its own or inherited; one far
// from every flag suggests nothing. A mistyped command is cobra's.
func TestFlagTypo(t *testing.T) {
	tests := []struct {
		args []string
		want string // "" for no suggestion
	}{
		{[]string{"analyze", "--prefx", "%m ", smallLog}, "unknown flag: --prefx\n\nDid you mean this?\n\t--prefix\n"},
		{[]string{"analyze", "--prefx=%m ", smallLog}, "\t--prefix\n"},
		{[]string{"replay", "--taget", "host=/tmp", smallLog}, "Did you mean this?\n\t--target\n"},
		{[]string{"replay", "--Speed", "2", smallLog}, "Did you mean this?\n\t--speed\n"},
		{[]string{"report", "--fail-onn", "p95>+20%", "a.json", "b.json"}, "Did you mean this?\n\t--fail-on\n"},
		{[]string{"analyze", "--completely-unknown", smallLog}, ""},
		{[]string{"anlyze", smallLog}, "Did you mean this?\n\tanalyze\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[:2], " "), func(t *testing.T) {
			code, _, stderr := runCLI(context.Background(), "", tt.args...)
			if code != ExitUsage {
				t.Errorf("exit %d, want %d", code, ExitUsage)
			}
			if tt.want == "" && strings.Contains(stderr, "Did you mean") || !strings.Contains(stderr, tt.want) {
				t.Errorf("want %q:\n%s", tt.want, stderr)
			}
		})
	}
}

// TestConnectionErrorOnce: a target where nothing answers is said once:
// no warning about the DSN's own login before the failure, pgconn's two
// attempts (with TLS and without) on one line, and the other logins
// counted, not repeated; exit 1.
func TestConnectionErrorOnce(t *testing.T) {
	dir := t.TempDir()
	log := minuteLog(t, dir, "three.log", [2]string{"app", "shop"}, [2]string{"report", "shop"}, [2]string{"app", "crm"})
	for _, target := range []string{"host=127.0.0.1 port=1 dbname=postgres", "host=" + dir + " port=1 dbname=postgres"} {
		t.Run(target, func(t *testing.T) {
			code, _, stderr := runCLI(context.Background(), "", "replay", "--target", target, "--prefix", testPrefix, log)
			if code != ExitFailure {
				t.Errorf("exit %d, want %d", code, ExitFailure)
			}
			for w, n := range map[string]int{"unreachable": 1, "dial error": 1, "PRE-FLIGHT FAILED": 1, "and 2 more logins alike": 1, "WARNING": 0} {
				if got := strings.Count(stderr, w); got != n {
					t.Errorf("%q said %d times, want %d:\n%s", w, got, n, stderr)
				}
			}
		})
	}
}

// defaultLogging is a target's logging at the server's defaults: no
// durations, a prefix without %c.
var defaultLogging = map[string]string{"log_min_duration_statement": "-1", "log_line_prefix": "%m [%p] "}

// TestTargetLogPreflight: --target-log onto a target that logs no
// durations, with a prefix without %c, fails the pre-flight within
// seconds, before anything is replayed, listing both settings at once;
// exit 1.
func TestTargetLogPreflight(t *testing.T) {
	parallelCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: defaultLogging})
	dir := t.TempDir()
	tl := filepath.Join(dir, "target.log")
	os.WriteFile(tl, nil, 0o644)
	log := minuteLog(t, dir, "minute.log", [2]string{"postgres", "postgres"})
	start := time.Now()
	code, stdout, stderr := runCLI(context.Background(), "", "replay", "--target", c.DSN("postgres"), "--prefix", testPrefix, "--target-log", tl, log)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %v: the pre-flight should fail within seconds", took)
	}
	if code != ExitFailure {
		t.Errorf("exit %d, want %d", code, ExitFailure)
	}
	for _, w := range []string{"PRE-FLIGHT FAILED", "nothing was replayed",
		"--target-log: the target's log cannot give server-side durations: log_min_duration_statement is -1: set it to 0",
		`--target-log: the target's log cannot give server-side durations: log_line_prefix "%m [%p] " lacks %p or %c`} {
		if !strings.Contains(stderr, w) {
			t.Errorf("message lacks %q:\n%s", w, stderr)
		}
	}
	if strings.Contains(stdout, "Replay at speed") {
		t.Errorf("the replay ran:\n%s", stdout)
	}
}

// TestRehearseChecklist: what both targets of a rehearsal lack (a role
// of the traffic, a login without CREATEDB for --reset template, logging
// settings for --control-log and --candidate-log) is listed at once, both sides,
// before any reset or round; what thins only the evidence
// (pg_stat_statements, pg_read_all_stats) is a warning; exit 1.
func TestRehearseChecklist(t *testing.T) {
	parallelCase(t)
	ctx := context.Background()
	dir := t.TempDir()
	dsn := map[string]string{}
	for _, side := range []string{"control", "candidate"} {
		c := pgclustertest.StartT(t, pgcluster.Options{Settings: defaultLogging})
		mustExec(t, c, "postgres", "CREATE ROLE rehearser LOGIN")
		// The candidate's login reads the settings, not the statistics.
		if side == "candidate" {
			mustExec(t, c, "postgres", "GRANT pg_read_all_settings TO rehearser")
		}
		dsn[side] = c.DSN("postgres") + " user=rehearser"
		os.WriteFile(filepath.Join(dir, side+".log"), nil, 0o644)
	}
	start := time.Now()
	code, stdout, stderr := runCLI(ctx, "", "rehearse", "--control", dsn["control"], "--candidate", dsn["candidate"],
		"--control-log", filepath.Join(dir, "control.log"), "--candidate-log", filepath.Join(dir, "candidate.log"),
		"--prefix", testPrefix, "--out", filepath.Join(dir, "out"), smallLog)
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("took %v: the checklist should fail within seconds", took)
	}
	if code != ExitFailure {
		t.Errorf("exit %d, want %d", code, ExitFailure)
	}
	for _, side := range []string{"control", "candidate"} {
		for _, w := range []string{
			`the ` + side + ` target: user "app", database "shop": role does not exist: role "app" does not exist (SQLSTATE 28000); create the role on the target (CREATE ROLE app LOGIN)`,
			`the ` + side + ` target: the login "rehearser" may not create databases, which --reset template does for each round: ALTER ROLE "rehearser" CREATEDB`,
			`the ` + side + ` target: --` + side + `-log: the target's log cannot give server-side durations: log_min_duration_statement is -1`,
			`the ` + side + ` target: --` + side + `-log: the target's log cannot give server-side durations: log_line_prefix "%m [%p] " lacks %p or %c`,
			map[string]string{
				"control":   `pre-flight: WARNING: the control target, for the server-side evidence (--observe): the login "rehearser" may not read the server's settings (shared_preload_libraries), so the observer cannot start: GRANT pg_monitor TO "rehearser"`,
				"candidate": `pre-flight: WARNING: the candidate target, for the server-side evidence (--observe): pg_stat_statements is neither preloaded nor created`,
			}[side],
		} {
			if !strings.Contains(stderr, w) {
				t.Errorf("message lacks %q:\n%s", w, stderr)
			}
		}
	}
	if w := `pre-flight: WARNING: the candidate target, for the server-side evidence (--observe): the login "rehearser" does not read other users' statistics: GRANT pg_read_all_stats TO "rehearser"`; !strings.Contains(stderr, w) {
		t.Errorf("message lacks %q:\n%s", w, stderr)
	}
	if strings.Count(stderr, "PRE-FLIGHT FAILED") != 1 || strings.Contains(stdout+stderr, "round 1") {
		t.Errorf("want one failure before any round:\n%s%s", stdout, stderr)
	}
}

// failingLog writes a log of one session: first, then n statements on a
// table the target lacks 20 ms apart, and one more a minute later, so
// that a replay that runs it to its end takes a minute.
func failingLog(t *testing.T, dir, name, first string, n int) string {
	t.Helper()
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	var b strings.Builder
	line := func(at time.Duration, msg string) {
		fmt.Fprintf(&b, "%s [2000] app@shop/app %x.7d0 %s\n", start.Add(at).Format("2006-01-02 15:04:05.000 MST"), start.Unix(), msg)
	}
	line(0, "LOG:  connection authorized: user=app database=shop application_name=app")
	if first != "" {
		line(time.Millisecond, "LOG:  duration: 0.100 ms  statement: "+first)
	}
	for i := range n {
		line(time.Duration(i+1)*20*time.Millisecond, fmt.Sprintf("LOG:  duration: 0.100 ms  statement: SELECT * FROM orders WHERE id = %d", i))
	}
	line(time.Minute, "LOG:  duration: 0.100 ms  statement: SELECT * FROM orders WHERE id = 0")
	return writeFile(t, filepath.Join(dir, name), []byte(b.String()))
}

// TestErrorWindow: a replay whose first statements all fail on the
// target, none in the original (no schema: 42P01), stops within seconds
// of its start, saying why, exit 3; one whose first statement succeeds
// is not stopped by the window.
func TestErrorWindow(t *testing.T) {
	parallelCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	mustExec(t, c, "postgres", "CREATE ROLE app LOGIN", "CREATE DATABASE shop OWNER app")
	dir := t.TempDir()
	start := time.Now()
	code, out, res := runReplay(t, "--target", c.DSN("postgres"), "--prefix", testPrefix, "--error-window", "20",
		failingLog(t, dir, "noschema.log", "", 100))
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("took %v: the replay should stop within seconds", took)
	}
	want := "REPLAY STOPPED EARLY: the first 20 statements all failed on the target, none of them in the original (by SQLSTATE: 20 42P01)"
	if code != ExitRegression || !strings.Contains(out, want) {
		t.Errorf("exit %d, want %d saying %q:\n%s", code, ExitRegression, want, out)
	}
	if res == nil || !res.IncompleteBecause(results.IncompleteErrorStart) || res.Outcomes.Ran >= 100 {
		t.Errorf("result %+v: want it marked error_start, stopped early", res)
	}

	// A first statement that succeeds: the target is not wholly wrong,
	// and the replay runs on (to the error rate's verdict).
	code, out, res = runReplay(t, "--target", c.DSN("postgres"), "--prefix", testPrefix, "--error-window", "20", "--speed", "0",
		failingLog(t, dir, "some.log", "SELECT 1", 30))
	if code != ExitRegression || strings.Contains(out, "STOPPED EARLY") || !strings.Contains(out, "REPLAY FAILED: the target's error rate") ||
		res == nil || res.Outcomes.Ran != 32 {
		t.Errorf("exit %d, ran %v:\n%s", code, res != nil && res.Outcomes.Ran == 32, out)
	}
}
