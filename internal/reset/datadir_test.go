package reset

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestDataDirReset: after a round that inserts, updates and deletes, the
// next round starts from the first one's state.
func TestDataDirReset(t *testing.T) {
	t.Parallel()
	c := pgclustertest.StartT(t, pgcluster.Options{})
	setupApp(t, c)
	ctx := context.Background()
	var r Resetter = &DataDir{Cluster: c}
	if _, err := r.Reset(ctx, 1); err == nil {
		t.Errorf("Reset before Prepare: want an error")
	}
	if err := r.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	start := appState(t, c, "app", "postgres")
	for round := 1; round <= 2; round++ {
		st, err := r.Reset(ctx, round)
		if err != nil {
			t.Fatalf("Reset %d: %v", round, err)
		}
		if st.Mode != ModeDataDir || st.Drifted || len(st.Databases) != 0 {
			t.Errorf("state = %+v", st)
		}
		if got := appState(t, c, "app", "postgres"); got != start {
			t.Errorf("round %d starts from %q, want %q", round, got, start)
		}
		pgclustertest.Exec(t, c, "app", "INSERT INTO items VALUES (9999, 'new'); UPDATE items SET v = 'x' WHERE id < 5; DELETE FROM items WHERE id > 450; SELECT nextval('ids')")
		pgclustertest.Exec(t, c, "postgres", "DELETE FROM counters")
		if err := r.Release(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	snaps, _ := filepath.Glob(filepath.Join(c.Dir(), "snapshot-*"))
	if len(snaps) != 1 {
		t.Errorf("snapshots before Close: %v, want one", snaps)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if snaps, _ := filepath.Glob(filepath.Join(c.Dir(), "snapshot-*")); len(snaps) != 0 {
		t.Errorf("Close left the copy of the data directory: %v", snaps)
	}
}
