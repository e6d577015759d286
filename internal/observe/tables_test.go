package observe

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestTableUpdates: the evidence counts each table's updates and HOT
// updates over the observation only (updates before its start left
// out), in every database, with the indexes of the tables updated and
// the columns they refer to (key, expression and predicate): the
// tellers' updates are no longer HOT once an index covers tbalance, the
// branches' stay HOT.
func TestTableUpdates(t *testing.T) {
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
	// pgbench's TPC-B-like script with a delta that is never 0: the
	// built-in one draws it from -5000 to 5000, and a 0 (about 2% of
	// runs of 200 transactions) leaves tbalance as it was, which makes
	// that update of the tellers HOT in spite of the index.
	script := filepath.Join(t.TempDir(), "tpcb-nonzero.sql")
	if err := os.WriteFile(script, []byte(tpcbNonZeroDelta), 0o644); err != nil {
		t.Fatal(err)
	}
	o := startCollector(t, c.DSN("postgres"), Options{Interval: 300 * time.Millisecond})
	if out, err := c.Pgbench(ctx, "-n", "-c", "2", "-t", "100", "-f", script, "postgres"); err != nil {
		t.Fatalf("pgbench: %v\n%s", err, out)
	}
	pgclustertest.Exec(t, c, "other", "UPDATE t SET w = w + 1")
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

// tpcbNonZeroDelta is pgbench's built-in tpcb-like script with the
// delta drawn from 1 to 5000, so that every update changes the balances.
const tpcbNonZeroDelta = `\set aid random(1, 100000 * :scale)
\set bid random(1, 1 * :scale)
\set tid random(1, 10 * :scale)
\set delta random(1, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
`

// TestLiveStopDoesNotWait: an observation of a live server (Options.Live,
// the observe command) reads the tables' counters at its stop at once,
// while its clients stay connected; a replay's observer looks for the
// other backends to end, up to TableFlushWait, so that the counters of
// sessions just ended are flushed.
func TestLiveStopDoesNotWait(t *testing.T) {
	functionalCase(t)
	c := startPgbench(t, pgssSettings(nil))
	ctx := context.Background()
	client := pgclustertest.Connect(ctx, t, c.DSN("postgres"))
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
