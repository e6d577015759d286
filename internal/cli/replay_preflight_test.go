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
	"github.com/pgrehearse/pgrehearse/internal/replay"
)

// minuteLog writes a stderr log of a minute: each login connects at the
// start, runs a statement, and runs another 59 s later, so that a replay
// that found a bad target only by running it would take a minute.
func minuteLog(t *testing.T, dir, name string, logins ...[2]string) string {
	t.Helper()
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	var b strings.Builder
	for i, l := range logins {
		pid := 2000 + i
		line := func(at time.Duration, msg string) {
			fmt.Fprintf(&b, "%s [%d] %s@%s/app %x.%x %s\n", start.Add(at).Format("2006-01-02 15:04:05.000 MST"),
				pid, l[0], l[1], start.Unix(), pid, msg)
		}
		line(0, fmt.Sprintf("LOG:  connection authorized: user=%s database=%s application_name=app", l[0], l[1]))
		line(time.Second, "LOG:  duration: 0.100 ms  statement: SELECT 1")
		line(59*time.Second, "LOG:  duration: 0.100 ms  statement: SELECT 2")
		line(60*time.Second, "LOG:  disconnection: session time: 0:01:00.000 user="+l[0]+" database="+l[1]+" host=[local]")
	}
	return writeFile(t, filepath.Join(dir, name), []byte(b.String()))
}

// TestPreflight: a wrong port, a wrong password, a missing role and a
// missing database each stop a replay of a one-minute log within seconds,
// before anything is sent, each with its own message saying what to do;
// a target that takes every login replays.
func TestPreflight(t *testing.T) {
	ctx, c := parallelServer(t)
	mustExec(t, c, "postgres", `CREATE ROLE app LOGIN PASSWORD 'right-password'`, `CREATE DATABASE shop OWNER app`,
		`CREATE ROLE outsider LOGIN`, `CREATE ROLE limited LOGIN CONNECTION LIMIT 0`, `REVOKE CONNECT ON DATABASE shop FROM PUBLIC`,
		`GRANT CONNECT ON DATABASE shop TO app, limited`)
	// Passwords are checked over TCP for app; the rest stays trusted.
	hba := filepath.Join(c.DataDir(), "pg_hba.conf")
	old := readFile(t, hba)
	if err := os.WriteFile(hba, append([]byte("host all app 127.0.0.1/32 scram-sha-256\n"), old...), 0o600); err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "postgres", "SELECT pg_reload_conf()")
	dir := t.TempDir()
	good := minuteLog(t, dir, "good.log", [2]string{"app", "shop"})
	tcp := func(port int, password string) string {
		return fmt.Sprintf("host=127.0.0.1 port=%d dbname=postgres sslmode=disable password=%s", port, password)
	}
	socket := c.DSN("postgres")
	tests := []struct {
		name, target, log string
		want              []string
		args              []string
		not               []string
	}{
		{"wrong port", tcp(1, "right-password"), good,
			[]string{"unreachable", "check --target's host and port"}, nil, nil},
		{"wrong password", tcp(c.Port(), "wrong-password"), good,
			[]string{`user "app", database "shop": authentication failed`, "pg_hba.conf"}, nil, nil},
		{"missing role", socket, minuteLog(t, dir, "ghost.log", [2]string{"app", "shop"}, [2]string{"ghost", "shop"}),
			[]string{`user "ghost", database "shop": role does not exist`, "CREATE ROLE ghost LOGIN", "--user-map ghost=ROLE"}, nil, nil},
		{"missing database", socket, minuteLog(t, dir, "nowhere.log", [2]string{"app", "nowhere"}),
			[]string{`user "app", database "nowhere": database does not exist`, "--database-map nowhere=DB"}, nil, nil},
		// The advice follows the SQLSTATE class, and the run's options.
		{"no privilege", socket, minuteLog(t, dir, "outsider.log", [2]string{"outsider", "shop"}),
			[]string{`user "outsider", database "shop": not allowed to connect`, "SQLSTATE 42501", "GRANT CONNECT ON DATABASE shop TO outsider"},
			nil, []string{"--user-map"}},
		{"no slot", socket, minuteLog(t, dir, "limited.log", [2]string{"limited", "shop"}),
			[]string{`user "limited", database "shop": no connection slot`, "SQLSTATE 53300", "CONNECTION LIMIT"},
			nil, []string{"--user-map", "CREATE ROLE"}},
		{"mapped role missing", socket, minuteLog(t, dir, "mapped.log", [2]string{"app", "shop"}, [2]string{"ghost", "shop"}),
			[]string{`user "phantom", database "shop": role does not exist`, "CREATE ROLE phantom LOGIN", "--user-map already replays as it"},
			[]string{"--user-map", "ghost=phantom"}, []string{"--user-map phantom=ROLE"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			args := append([]string{"replay", "--target", tt.target, "--prefix", testPrefix}, tt.args...)
			code, stdout, stderr := runCLI(ctx, "", append(args, tt.log)...)
			took := time.Since(start)
			if code != ExitFailure {
				t.Errorf("exit %d, want %d", code, ExitFailure)
			}
			if took > 5*time.Second {
				t.Errorf("took %v, want under 5 s", took)
			}
			for _, w := range append(tt.want, "PRE-FLIGHT FAILED", "nothing was replayed") {
				if !strings.Contains(stderr, w) {
					t.Errorf("message lacks %q:\n%s", w, stderr)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(stderr, w) {
					t.Errorf("message has %q, which the cause or the options rule out:\n%s", w, stderr)
				}
			}
			if strings.Contains(stdout+stderr, "wrong-password") || strings.Contains(stdout+stderr, "right-password") {
				t.Errorf("a password is printed:\n%s%s", stdout, stderr)
			}
			if strings.Contains(stdout, "Replay at speed") {
				t.Errorf("the replay ran:\n%s", stdout)
			}
		})
	}

	// A target that does not parse is a usage error, found before the
	// pre-flight (cli/dsn.go).
	t.Run("bad DSN", func(t *testing.T) {
		code, _, stderr := runCLI(ctx, "", "replay", "--target", "host=/tmp port=notaport", "--prefix", testPrefix, good)
		if code != ExitUsage || !strings.Contains(stderr, "--target: cannot parse the keyword/value connection string (host, port)") ||
			strings.Contains(stderr, "PRE-FLIGHT") {
			t.Errorf("exit %d, want %d naming --target before any pre-flight:\n%s", code, ExitUsage, stderr)
		}
	})
	t.Run("every login accepted", func(t *testing.T) {
		short := minuteLog(t, dir, "short.log", [2]string{"app", "shop"})
		code, _, stderr := runCLI(ctx, "", "replay", "--target", tcp(c.Port(), "right-password"), "--prefix", testPrefix,
			"--speed", "0", short)
		if code != ExitOK || !strings.Contains(stderr, "pre-flight: the target accepted 1 of 2 logins") {
			t.Errorf("exit %d:\n%s", code, stderr)
		}
		// The DSN has no user: the observer's login is the operating
		// system user's, which the target lacks.
		if !strings.Contains(stderr, "WARNING: the target DSN's own user and database: role does not exist") {
			t.Errorf("no warning about the observer's login:\n%s", stderr)
		}
	})
	t.Run("target log needs the DSN's login", func(t *testing.T) {
		tl := filepath.Join(dir, "target.log")
		os.WriteFile(tl, nil, 0o644)
		code, _, stderr := runCLI(ctx, "", "replay", "--target", tcp(c.Port(), "right-password"), "--prefix", testPrefix,
			"--speed", "0", "--target-log", tl, "--target-log", filepath.Join(dir, "nope.log"), good)
		for _, w := range []string{"PRE-FLIGHT FAILED", "nope.log: does not exist", "the target DSN's own user and database: role does not exist"} {
			if code != ExitFailure || !strings.Contains(stderr, w) {
				t.Errorf("exit %d, want %q:\n%s", code, w, stderr)
			}
		}
	})
	t.Run("skipped", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_, _, stderr := runCLI(ctx, "", "replay", "--target", tcp(1, "x"), "--prefix", testPrefix, "--skip-preflight", "--speed", "0", good)
		if strings.Contains(stderr, "PRE-FLIGHT") {
			t.Errorf("--skip-preflight checked:\n%s", stderr)
		}
	})
}

// TestDestructiveListed: a dry run's summary and a replay's start list the
// statements that destroy or reshape, with counts.
func TestDestructiveListed(t *testing.T) {
	parallelCase(t)
	ctx := context.Background()
	dir := t.TempDir()
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	var b strings.Builder
	for i, sql := range []string{"CREATE TABLE t (id int)", "DELETE FROM t", "DROP TABLE t", "CREATE TABLE t (id int)", "TRUNCATE t", "DROP TABLE t", "SELECT 1"} {
		fmt.Fprintf(&b, "%s [7] postgres@postgres/app %x.7 LOG:  duration: 0.100 ms  statement: %s\n",
			start.Add(time.Duration(i)*time.Millisecond).Format("2006-01-02 15:04:05.000 MST"), start.Unix(), sql)
	}
	log := filepath.Join(dir, "d.log")
	os.WriteFile(log, []byte(b.String()), 0o644)
	want := "DROP TABLE 2, DELETE without WHERE 1, TRUNCATE 1"
	code, stdout, stderr := runCLI(ctx, "", "replay", "--dry-run", "--prefix", testPrefix, log)
	if code != ExitOK || !strings.Contains(stdout, want) {
		t.Errorf("dry run: exit %d, want %q:\n%s%s", code, want, stdout, stderr)
	}
	c := pgclustertest.StartT(t, pgcluster.Options{})
	code, stdout, stderr = runCLI(ctx, "", "replay", "--target", c.DSN("postgres"), "--speed", "0", "--prefix", testPrefix, log)
	if code != ExitOK || !strings.Contains(stderr, "pre-flight: the log holds destructive statements, which the replay will run on the target: "+want) {
		t.Errorf("replay: exit %d, want %q:\n%s%s", code, want, stdout, stderr)
	}
}

// TestProblemOf checks that a refused login is sorted by its SQLSTATE
// class, so that the advice follows the cause.
func TestProblemOf(t *testing.T) {
	for _, tc := range []struct {
		code, msg string
		want      replay.Problem
	}{
		{"3D000", `database "x" does not exist`, replay.ProblemNoDatabase},
		{"28000", `role "x" does not exist`, replay.ProblemNoRole},
		{"28000", `no pg_hba.conf entry for host "1.2.3.4"`, replay.ProblemAuth},
		{"28P01", `password authentication failed for user "x"`, replay.ProblemAuth},
		{"42501", `permission denied for database "x"`, replay.ProblemNoPrivilege},
		{"53300", `sorry, too many clients already`, replay.ProblemTooMany},
		{"53300", `too many connections for role "x"`, replay.ProblemTooMany},
		{"53200", `out of memory`, replay.ProblemTooMany},
		{"57P03", `the database system is starting up`, replay.ProblemNotReady},
		{"57P01", `terminating connection due to administrator command`, replay.ProblemNotReady},
		{"08006", `connection failure`, replay.ProblemUnreachable},
		{"XX000", `internal error`, replay.ProblemRefused},
	} {
		if got := replay.ProblemOf(tc.code, tc.msg); got != tc.want {
			t.Errorf("ProblemOf(%s, %q) = %v, want %v", tc.code, tc.msg, got, tc.want)
		}
	}
}

// TestLoginAdvice checks the advice against the run's options: a name a
// map already gives is to be created, never renamed again; a server not
// ready names the --connect-timeout it was retried for.
func TestLoginAdvice(t *testing.T) {
	h := newLoginHints(replayFlags{userMap: []string{"prod=app"}, dbMap: []string{"proddb=shop"}, connectTimeout: 45 * time.Second})
	for _, tc := range []struct {
		p        replay.Problem
		user, db string
		want     string
		not      string
	}{
		{replay.ProblemNoRole, "app", "shop", "--user-map already replays as it", "--user-map app="},
		{replay.ProblemNoRole, "other", "shop", "--user-map other=ROLE", "already"},
		{replay.ProblemNoDatabase, "app", "shop", "--database-map already replays into it", "--database-map shop="},
		{replay.ProblemNoDatabase, "app", "elsewhere", "--database-map elsewhere=DB", "already"},
		{replay.ProblemNotReady, "app", "shop", "--connect-timeout (45s)", "CREATE"},
		{replay.ProblemTooMany, "app", "shop", "max_connections", "--user-map"},
		{replay.ProblemNoPrivilege, "app", "shop", "GRANT CONNECT ON DATABASE shop TO app", "--user-map"},
	} {
		got := h.Advice(tc.p, tc.user, tc.db)
		if !strings.Contains(got, tc.want) || strings.Contains(got, tc.not) {
			t.Errorf("advice(%v, %s, %s) = %q, want %q and not %q", tc.p, tc.user, tc.db, got, tc.want, tc.not)
		}
	}
}

// TestReplayInterruptedPreflight: Ctrl-C before the replay's pre-flight
// has its answers (here, before it starts) is told as an interruption,
// exit 5, never as a target that refuses the replay's connections: the
// logins the interruption cut short failed, the target did not.
func TestReplayInterruptedPreflight(t *testing.T) {
	parallelCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	log := minuteLog(t, t.TempDir(), "app.log", [2]string{"postgres", "postgres"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	code, _, stderr := runCLI(ctx, "", "replay", "--target", c.DSN("postgres"), "--prefix", testPrefix, log)
	if code != ExitIncomplete || !strings.Contains(stderr, "INTERRUPTED during the pre-flight: nothing was replayed") {
		t.Errorf("exit %d, want %d saying the pre-flight was interrupted:\n%s", code, ExitIncomplete, stderr)
	}
	if strings.Contains(stderr, "PRE-FLIGHT FAILED") {
		t.Errorf("the interruption is told as a failed pre-flight:\n%s", stderr)
	}
}
