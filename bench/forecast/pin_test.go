package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestPinnedBinaries starts a server from pinnedBinaries' copy on CPU 0
// and checks that its backend runs there, and that a restart through
// the cluster's recorded binaries (what rehearse's datadir reset does)
// keeps it there.
func TestPinnedBinaries(t *testing.T) {
	// The bench's output directory: its own, as reachable as the
	// bench makes it (t.TempDir's parent is not).
	out, err := os.MkdirTemp("", "pin")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(out) })
	if _, err := pinnedBinaries("", filepath.Join(t.TempDir(), "bin", "default"), "0"); err == nil || !strings.Contains(err.Error(), "cannot enter") {
		t.Fatalf("pinned binaries below a directory the servers cannot enter: %v, want an error that says so", err)
	}
	bin, err := pinnedBinaries("", filepath.Join(out, "bin", "default"), "0")
	if err != nil {
		t.Fatal(err)
	}
	c := pgclustertest.StartT(t, pgcluster.Options{BinDir: bin})
	ctx := context.Background()
	if got := backendCPUs(t, ctx, c); got != "0" {
		t.Fatalf("a backend of the pinned server may run on CPUs %q, want 0", got)
	}
	snap, err := c.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Restore(ctx, snap); err != nil {
		t.Fatal(err)
	}
	if got := backendCPUs(t, ctx, c); got != "0" {
		t.Fatalf("after a restore, a backend may run on CPUs %q, want 0", got)
	}
}

// backendCPUs returns the CPU list a new backend of c may run on.
func backendCPUs(t *testing.T, ctx context.Context, c *pgcluster.Cluster) string {
	t.Helper()
	conn, err := pgconn.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	res, err := conn.Exec(ctx, "SELECT pg_backend_pid()").ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%s/status", res[0].Rows[0][0]))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no Cpus_allowed_list in the backend's /proc status:\n%s", status)
	return ""
}
