package pgcluster_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestAttach: a cluster started elsewhere is found by its directory, on
// its port; its snapshots restore it, do not collide with the owner's,
// and are removed on request; Attach leaves the directory in place.
func TestAttach(t *testing.T) {
	t.Parallel()
	owner := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	pgclustertest.Exec(t, owner, "postgres", "CREATE TABLE t (id int); INSERT INTO t SELECT generate_series(1, 100)")
	ownSnap, err := owner.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := pgcluster.Attach(owner.Dir())
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	if c.Port() != owner.Port() || c.DSN("postgres") != owner.DSN("postgres") {
		t.Fatalf("attached on port %d (%s), want %d", c.Port(), c.DSN("postgres"), owner.Port())
	}
	snap, err := c.Snapshot(ctx)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	if snap.Dir() == ownSnap.Dir() {
		t.Fatalf("the attached cluster's snapshot overwrote the owner's: %s", snap.Dir())
	}
	pgclustertest.Exec(t, c, "postgres", "DELETE FROM t")
	if err := c.Restore(ctx, snap); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if got := query(t, owner, "postgres", "SELECT count(*)::text FROM t"); got != "100" {
		t.Errorf("after Restore the owner sees %s rows, want 100", got)
	}
	if err := snap.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(snap.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Remove left %s: %v", snap.Dir(), err)
	}
	if _, err := os.Stat(ownSnap.Dir()); err != nil {
		t.Errorf("Remove of the attached snapshot took the owner's: %v", err)
	}

	// A directory that is not a cluster's, and a cluster that is not
	// running, are named as such.
	if _, err := pgcluster.Attach(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a throwaway cluster") {
		t.Errorf("Attach of an empty directory: %v", err)
	}
	if err := owner.StopServer(); err != nil {
		t.Fatal(err)
	}
	if _, err := pgcluster.Attach(filepath.Join(owner.Dir(), ".")); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Errorf("Attach of a stopped cluster: %v", err)
	}
}

// TestAttachOtherVersion: a cluster of another major version than the
// installed one (a demo's upgrade candidate) is attached with the
// binaries it was started with, so that its snapshot restores and its
// server starts again on that version.
func TestAttachOtherVersion(t *testing.T) {
	t.Parallel()
	owner := pgclustertest.StartVersion(t, 18, nil)
	c, err := pgcluster.Attach(owner.Dir())
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	if c.BinDir() != owner.BinDir() {
		t.Errorf("attached with the binaries of %s, want %s", c.BinDir(), owner.BinDir())
	}
	ctx := context.Background()
	snap, err := c.Snapshot(ctx)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	if err := c.Restore(ctx, snap); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if got := query(t, owner, "postgres", "SHOW server_version_num"); !strings.HasPrefix(got, "18") {
		t.Errorf("after Restore the server is %s, want 18", got)
	}
}
