package pgclustertest

import (
	"context"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
)

// StartT starts a cluster for a test or benchmark and stops it in
// t.Cleanup. It fails t, with a message saying how to install them, when
// the PostgreSQL binaries are missing: a test that needs a server must not
// pass silently without one.
func StartT(t testing.TB, opts pgcluster.Options) *pgcluster.Cluster {
	t.Helper()
	// Not t.Context(): that is canceled before cleanups run, and
	// starting may take a while on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := pgcluster.Start(ctx, opts)
	if err != nil {
		t.Fatalf("pgcluster: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("pgcluster: stop: %v", err)
		}
	})
	return c
}
