package pgcluster_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestSnapshotRestore: what a round wrote after the snapshot is gone after
// each Restore, the server is back on its port, and its log is kept.
func TestSnapshotRestore(t *testing.T) {
	t.Parallel()
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	pgclustertest.Exec(t, c, "postgres", "CREATE TABLE t (id int PRIMARY KEY, v text); INSERT INTO t SELECT i, 'v' || i FROM generate_series(1, 1000) i")
	const state = "SELECT count(*) || ':' || sum(hashtext(id || v)) FROM t"
	want := query(t, c, "postgres", state)
	port := c.Port()

	snap, err := c.Snapshot(ctx)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	if got := query(t, c, "postgres", state); got != want {
		t.Fatalf("after Snapshot the state is %s, want %s", got, want)
	}
	if _, err := os.Stat(filepath.Join(snap.Dir(), "PG_VERSION")); err != nil {
		t.Errorf("the snapshot lacks PG_VERSION: %v", err)
	}
	for round := 1; round <= 2; round++ {
		if err := c.Exec(ctx, "postgres", "INSERT INTO t VALUES (5000, 'new'); UPDATE t SET v = 'changed' WHERE id <= 10; DELETE FROM t WHERE id > 900; CREATE TABLE t2 ()"); err != nil {
			t.Fatalf("round %d writes: %v", round, err)
		}
		if got := query(t, c, "postgres", state); got == want {
			t.Fatalf("round %d: the writes did not change the state", round)
		}
		if err := c.Restore(ctx, snap); err != nil {
			t.Fatalf("Restore %d: %v", round, err)
		}
		if c.Port() != port {
			t.Errorf("Restore moved the server from port %d to %d", port, c.Port())
		}
		if got := query(t, c, "postgres", state); got != want {
			t.Errorf("after Restore %d the state is %s, want %s", round, got, want)
		}
		if got := query(t, c, "postgres", "SELECT count(*)::text FROM pg_class WHERE relname = 't2'"); got != "0" {
			t.Errorf("after Restore %d the table created after the snapshot is still there", round)
		}
		if got := query(t, c, "postgres", "SHOW port"); got != strconv.Itoa(port) {
			t.Errorf("SHOW port = %s, want %d", got, port)
		}
	}
	for _, leftover := range []string{"data.old", "data.restore"} {
		if _, err := os.Stat(filepath.Join(c.Dir(), leftover)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind: %v", leftover, err)
		}
	}
	if fi, err := os.Stat(c.ServerLog()); err != nil || fi.Size() == 0 {
		t.Errorf("the server log is gone or empty after Restore: %v", err)
	}

	// A stopped server stays stopped through a Snapshot, and Restore
	// starts it.
	if err := c.StopServer(); err != nil {
		t.Fatal(err)
	}
	snap2, err := c.Snapshot(ctx)
	if err != nil {
		t.Fatalf("Snapshot of a stopped server: %v", err)
	}
	if _, err := os.Stat(filepath.Join(c.DataDir(), "postmaster.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Snapshot started a stopped server")
	}
	if snap2.Dir() == snap.Dir() {
		t.Errorf("two snapshots share %s", snap.Dir())
	}
	if err := c.Restore(ctx, snap2); err != nil {
		t.Fatalf("Restore of a stopped server: %v", err)
	}
	if got := query(t, c, "postgres", state); got != want {
		t.Errorf("after the second snapshot's Restore the state is %s, want %s", got, want)
	}
}

// TestRestoreOtherCluster: a snapshot restores only the cluster it was
// taken of.
func TestRestoreOtherCluster(t *testing.T) {
	t.Parallel()
	a := pgclustertest.StartT(t, pgcluster.Options{})
	b := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	snap, err := a.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Restore(ctx, snap); err == nil {
		t.Fatalf("Restore of another cluster's snapshot: want an error")
	}
	if got := query(t, b, "postgres", "SELECT 1::text"); got != "1" {
		t.Errorf("b after the refused Restore: %s", got)
	}
}
