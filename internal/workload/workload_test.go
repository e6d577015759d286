package workload

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

func TestRun(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: LogSettings()})
	ctx := context.Background()
	var progress strings.Builder
	sum, err := Run(ctx, c, Options{Duration: 3 * time.Second, Progress: &progress})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}

	// The application part is the same on every run.
	want := AppSummary{
		Sessions:          9, // main, failures, 2 others, 5 churn
		FailedConnections: 1,
		Queries:           22, // 12 in main, 8 in failures, 2 in others
		Prepares:          2,
		Executions:        25, // 15 in main, 4 in failures, 1 in others, 5 in churn
		Failed:            10,
		SQLStates:         []string{"42601", "22012", "22012", "42601", "22012", "23505", "22012", "25P02", "25P02", "3D000"},
		Roles:             []string{AppRole, c.User()},
		Databases:         []string{AppDatabase, PgbenchDatabase},
	}
	got := sum.App
	if got.Sessions != want.Sessions || got.FailedConnections != want.FailedConnections ||
		got.Queries != want.Queries || got.Prepares != want.Prepares ||
		got.Executions != want.Executions || got.Failed != want.Failed ||
		!slices.Equal(got.SQLStates, want.SQLStates) || !slices.Equal(got.Roles, want.Roles) ||
		!slices.Equal(got.Databases, want.Databases) {
		t.Errorf("App summary\n got %+v\nwant %+v", got, want)
	}

	if len(sum.Pgbench) != len(Modes) {
		t.Fatalf("%d pgbench runs, want %d", len(sum.Pgbench), len(Modes))
	}
	for i, run := range sum.Pgbench {
		if run.Mode != Modes[i] || run.Transactions <= 0 || run.Duration != time.Second {
			t.Errorf("pgbench run %d = %+v, want mode %s, 1s and some transactions", i, run, Modes[i])
		}
	}
	if !strings.Contains(progress.String(), "pgbench -M prepared") {
		t.Errorf("progress lacks the prepared pgbench run:\n%s", progress.String())
	}

	// What the application wrote is what it meant to write: the odd
	// values survived the trip, the rolled back work did not.
	conn := pgclustertest.Connect(ctx, t, c.DSN(AppDatabase))
	defer conn.Close(ctx)
	for i, v := range OddValues {
		var note *string
		if err := conn.QueryRow(ctx, "SELECT note FROM accounts WHERE id = $1", i+1).Scan(&note); err != nil {
			t.Fatalf("account %d: %v", i+1, err)
		}
		if (note == nil) != (v == nil) || (v != nil && *note != *v) {
			t.Errorf("account %d note = %v, want %v", i+1, deref(note), deref(v))
		}
	}
	var notes, balance int
	if err := conn.QueryRow(ctx, "SELECT (SELECT count(*) FROM notes), (SELECT sum(balance)::int FROM accounts WHERE id <= 3)").Scan(&notes, &balance); err != nil {
		t.Fatal(err)
	}
	if notes != 0 || balance != 0 {
		t.Errorf("notes = %d, balance of accounts 1-3 = %d; want 0 and 0 (rolled back insert, balanced transfer, rolled back delete)", notes, balance)
	}
	conn.Close(ctx)

	// The log has each kind of entry the workload is there to produce.
	log, err := os.ReadFile(pgclustertest.StoppedLog(t, c))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"connection authorized: user=app database=app application_name=" + AppName,
		"app@app/" + AppName,
		"postgres@postgres/pgbench",
		"execute insert_account: INSERT INTO accounts",
		"execute <unnamed>: SELECT id, name",
		"execute P_0:", // pgbench -M prepared
		"$3 = 'she said ''''hi'''' and \"bye\"'",
		"$3 = NULL",
		"$3 = 'NULL'",
		LongValue,
		"naïve café — ✓ 日本語 🐘",
		"statement: SELECT 1; SELECT 2",
		"\tid\tinteger PRIMARY KEY,",
		"ERROR:  syntax error at or near \"SELEC\"",
		"ERROR:  duplicate key value violates unique constraint \"accounts_pkey\"",
		"ERROR:  division by zero",
		"ERROR:  current transaction is aborted, commands ignored until end of transaction block",
		"FATAL:  database \"no_such_database\" does not exist",
		"disconnection: session time:",
	} {
		if !strings.Contains(string(log), s) {
			t.Errorf("stderr log lacks %q", s)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<NULL>"
	}
	return *s
}

// TestAppIsNotOwn: the application's sessions are workload, never taken
// for pgrehearse's own (whose statements analyses leave out).
func TestAppIsNotOwn(t *testing.T) {
	if (&event.Event{Application: AppName}).IsOwn() {
		t.Errorf("AppName %q is named as pgrehearse's own connections", AppName)
	}
}
