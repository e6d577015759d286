package observe

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestTableUpdates: the evidence counts each table's updates and HOT
// updates over the observation only (updates before its start left
// out), in every database, with the indexes of the tables updated and
// the columns they refer to (key, expression and predicate): the
// tellers' updates are no longer HOT once an index covers tbalance, the
// branches' stay HOT.
func TestTableUpdates(t *testing.T) {
	// Sequential: run among the parallel cases it once counted a HOT
	// update of the tellers (1 of 200), which may as well be pgbench's
	// random delta of 0 (tbalance unchanged) as the timing.
	c := startPgbench(t, pgssSettings(nil))
	ctx := context.Background()
	for _, x := range []struct{ db, sql string }{
		{"postgres", "CREATE INDEX pgbench_tellers_tbalance_idx ON pgbench_tellers (tbalance)"},
		{"postgres", "CREATE DATABASE other"},
		{"other", "CREATE TABLE t (id int PRIMARY KEY, v int, w int)"},
		{"other", "CREATE INDEX t_expr ON t ((w + 1)) WHERE v > 0"},
		{"other", "INSERT INTO t SELECT i, i, i FROM generate_series(1, 10) i"},
		// Before the observation: not counted.
		{"other", "UPDATE t SET w = w + 1"},
	} {
		if err := c.Exec(ctx, x.db, x.sql); err != nil {
			t.Fatalf("%s: %v", x.sql, err)
		}
	}
	o := startCollector(t, c.DSN("postgres"), Options{Interval: 300 * time.Millisecond})
	if out, err := c.Pgbench(ctx, "-n", "-c", "2", "-t", "100", "postgres"); err != nil {
		t.Fatalf("pgbench: %v\n%s", err, out)
	}
	if err := c.Exec(ctx, "other", "UPDATE t SET w = w + 1"); err != nil {
		t.Fatal(err)
	}
	e := stop(t, o)
	got := map[string]TableUpdates{}
	for _, tu := range e.Tables {
		got[tu.Database+"."+tu.Name] = tu
	}
	t.Logf("%+v", e.Tables)
	tellers, branches, other := got["postgres.pgbench_tellers"], got["postgres.pgbench_branches"], got["other.t"]
	if tellers.Updates != 200 || tellers.HOTUpdates != 0 {
		t.Errorf("tellers: %+v", tellers)
	}
	ix := func(tu TableUpdates, name string) []string {
		for _, i := range tu.Indexes {
			if i.Name == name {
				return i.Columns
			}
		}
		return nil
	}
	if cols := ix(tellers, "pgbench_tellers_tbalance_idx"); !slices.Equal(cols, []string{"tbalance"}) {
		t.Errorf("tellers' index on tbalance: %v in %+v", cols, tellers.Indexes)
	}
	if cols := ix(tellers, "pgbench_tellers_pkey"); !slices.Equal(cols, []string{"tid"}) {
		t.Errorf("tellers' primary key: %v", cols)
	}
	if branches.Updates != 200 || branches.HOTUpdates == 0 {
		t.Errorf("branches: %+v", branches)
	}
	if other.Updates != 10 || other.HOTUpdates != 0 || other.Schema != "public" {
		t.Errorf("other.t: %+v", other)
	}
	if cols := ix(other, "t_expr"); !slices.Equal(cols, []string{"v", "w"}) {
		t.Errorf("t_expr: %v", cols)
	}
	if _, ok := got["postgres.pgbench_accounts"]; !ok {
		t.Errorf("no pgbench_accounts: %v", e.Tables)
	}
}

// TestLiveStopDoesNotWait: an observation of a live server (Options.Live,
// the observe command) reads the tables' counters at its stop at once,
// while its clients stay connected; a replay's observer looks for the
// other backends to end, up to TableFlushWait, so that the counters of
// sessions just ended are flushed.
func TestLiveStopDoesNotWait(t *testing.T) {
	functionalCase(t)
	c := startPgbench(t, pgssSettings(nil))
	ctx := context.Background()
	client, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close(ctx)
	for _, live := range []bool{true, false} {
		o := startCollector(t, c.DSN("postgres"), Options{Live: live})
		if _, err := o.Stop(); err != nil {
			t.Fatal(err)
		}
		switch {
		case live && o.flushLooks != 0:
			t.Errorf("live: Stop looked %d times for the other backends to end", o.flushLooks)
		case !live && o.flushLooks < 2:
			t.Errorf("replay's observer: Stop looked %d times for a client that stayed connected, want until TableFlushWait", o.flushLooks)
		}
	}
}
