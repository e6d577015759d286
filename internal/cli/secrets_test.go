package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

const (
	plantedPassword = "PlantedPw-7f3a9c"
	plantedEmail    = "planted.user@example.com"
)

// TestNoSecretsInOutput: a password and an e-mail address planted in a
// real server's traffic (as a statement's constants, as a bound parameter,
// and in a failing statement) appear in no output of any command, text,
// JSON or HTML, unless --show-params asks for them; --keep-samples keeps
// them in the results it writes, and a report that explains plans with
// them still shows none.
func TestNoSecretsInOutput(t *testing.T) {
	parallelCase(t)
	ctx := context.Background()
	a := pgclustertest.StartT(t, pgcluster.Options{Settings: workload.LogSettings()})
	b := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{"shared_preload_libraries": "pg_stat_statements"}})
	setup := []string{"CREATE ROLE app LOGIN", "CREATE TABLE users (email text PRIMARY KEY, name text)"}
	for _, c := range []*pgcluster.Cluster{a, b} {
		for _, sql := range setup {
			mustExec(t, c, "postgres", sql)
		}
	}
	mustExec(t, b, "postgres", "CREATE EXTENSION pg_stat_statements")
	conn, err := pgconn.Connect(ctx, a.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		"ALTER ROLE app PASSWORD '" + plantedPassword + "'",
		"INSERT INTO users VALUES ('" + plantedEmail + "', 'Planted')",
		"SELECT name FROM users WHERE email = '" + plantedEmail + "'",
		"SELECT 1; SELECT count(*) FROM users WHERE email <> '" + plantedEmail + "'",
	} {
		if _, err := conn.Exec(ctx, sql).ReadAll(); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if r := conn.ExecParams(ctx, "SELECT name FROM users WHERE email = $1", [][]byte{[]byte(plantedEmail)}, nil, nil, nil).Read(); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	// A failure whose server message quotes the value.
	conn.Exec(ctx, "SELECT '"+plantedEmail+"'::int").ReadAll()
	conn.Close(ctx)
	log := pgclustertest.StoppedLog(t, a)
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }

	var outputs []string
	run := func(args ...string) {
		t.Helper()
		code, stdout, stderr := runCLI(ctx, "", args...)
		if code != ExitOK && code != ExitRegression {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr)
		}
		outputs = append(outputs, strings.Join(args, " ")+"\x00"+stdout+stderr)
	}
	run("analyze", "--json", p("a.json"), "--top", "50", log)
	run("events", log)
	run("events", "--count", log)
	run("findings", log)
	run("replay", "--target", b.DSN("postgres"), "--speed", "0", "--json", p("r.json"), log)
	run("report", p("a.json"), p("r.json"), "--allow-mixed-latency", "--json", p("rep.json"), "--html", p("rep.html"), "--top", "50")
	run("report", p("r.json"), "--html", p("one.html"))
	run("merge", "--json", p("m.json"), p("a.json"))
	// Asked to keep samples, the results hold the values; the report
	// explains with them on the servers, and prints and writes none.
	run("analyze", "--keep-samples", "--json", p("ka.json"), log)
	run("replay", "--keep-samples", "--target", b.DSN("postgres"), "--speed", "0", "--json", p("kr.json"), log)
	// The second replay's INSERT meets the first's row: it diverged
	// (exit 6), and its plans are explained all the same.
	args := []string{"report", p("ka.json"), p("kr.json"), "--allow-mixed-latency", "--control-dsn", b.DSN("postgres"), "--candidate-dsn", b.DSN("postgres"),
		"--plans-top", "50", "--json", p("plans.json"), "--html", p("plans.html")}
	code, stdout, stderr := runCLI(ctx, "", args...)
	if code != ExitDiverged {
		t.Fatalf("%v: exit %d, want %d\n%s", args, code, ExitDiverged, stderr)
	}
	outputs = append(outputs, strings.Join(args, " ")+"\x00"+stdout+stderr)
	for _, f := range []string{"ka.json", "kr.json"} {
		if data, err := os.ReadFile(p(f)); err != nil || !strings.Contains(string(data), plantedEmail) {
			t.Errorf("%s lacks the values --keep-samples keeps: %v", f, err)
		}
	}
	if data, err := os.ReadFile(p("plans.json")); err != nil || !strings.Contains(string(data), `"sample": "slowest"`) {
		t.Errorf("report explained no statement with kept values: %v", err)
	}
	for _, f := range []string{"a.json", "r.json", "rep.json", "rep.html", "one.html", "m.json", "plans.json", "plans.html"} {
		b := readFile(t, p(f))
		outputs = append(outputs, f+"\x00"+string(b))
	}
	for _, out := range outputs {
		name, text, _ := strings.Cut(out, "\x00")
		for _, secret := range []string{plantedPassword, plantedEmail} {
			if i := strings.Index(text, secret); i >= 0 {
				t.Errorf("%s shows %q: ...%s...", name, secret, text[max(i-120, 0):min(i+60, len(text))])
			}
		}
		// Findings speak to the user: public sources, not our own
		// internal names, and no advice to give what was given.
		for _, internal := range []string{"field report", "give the logs rather"} {
			if strings.Contains(strings.ToLower(text), internal) {
				t.Errorf("%s speaks of %q", name, internal)
			}
		}
	}

	// Asked for, they are shown.
	code, stdout, _ = runCLI(ctx, "", "events", "--show-params", log)
	if code != ExitOK || !strings.Contains(stdout, plantedPassword) || !strings.Contains(stdout, plantedEmail) {
		t.Errorf("events --show-params hides what it was asked to show (exit %d)", code)
	}
}
