package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/results"
)

// TestShardsStartAtDefaultSync is issue 77's: the mixed workload's log
// (pgbench and an application that creates its own tables) split in 3
// shard processes that meet at --start-at, with no coordination database,
// at replay's default --sync. A shard cannot keep the answers order
// alone: it ran every shard into sync waits given up at their timeout
// (652 s, exit 5). Each shard now runs in the object order and says so,
// on standard error and in its result, and ends (exit 0); the merge runs
// every statement one process does. A session that logs in before
// another shard created its role or database is retried meanwhile.
func TestShardsStartAtDefaultSync(t *testing.T) {
	slowCase(t, 20*time.Second)
	log := captureMixed(t, 3*time.Second)
	single := pgssTarget(t)
	code, out, one := runReplay(t, "--target", single.DSN("postgres"), "--speed", "0", "--sync", "object", "--findings=false", log)
	if code != ExitOK || one == nil {
		t.Fatalf("single replay exited %d:\n%s", code, out)
	}
	target := pgssTarget(t)
	dir := t.TempDir()
	// The shards' processes start within a second on a quiet machine.
	at := time.Now().Add(4 * time.Second).UTC().Format(time.RFC3339Nano)
	// No --max-error-rate crutch: a statement that reads a table another
	// shard's session creates is run again until it exists (no
	// coordination database to wait for that commit).
	ps := runShards(t, 3, dir, "--shards", "3", "--start-at", at, "--target", target.DSN("postgres"), "--findings=false", log)
	for _, p := range ps {
		if p.code != ExitOK {
			t.Errorf("shard %d exited %d:\n%s", p.k, p.code, p.out.String())
		}
		if !strings.Contains(p.out.String(), "ran in the object order, not the default answers order") {
			t.Errorf("shard %d did not say it ran in the object order:\n%s", p.k, p.out.String())
		}
	}
	code, text, m := mergeShards(t, dir, ps)
	if code != ExitOK {
		t.Fatalf("merge exited %d:\n%s", code, text)
	}
	if sy := m.Sync; sy == nil || sy.Mode != results.SyncObject || sy.Scope != results.SyncWithinShard ||
		!strings.Contains(strings.Join(sy.Notes, "; "), "a coordination database keeps it across shards") {
		t.Errorf("merged sync %+v: want the object mode within shards, with the note why", sy)
	} else {
		t.Logf("merged sync: %d waited, %d timeouts, %d deadlocks; %d statements run again (a relation another shard creates missing); statements %+v",
			sy.Waited, sy.Timeouts, sy.Deadlocks, m.Sessions.CreatedElsewhereRetries, m.Statements)
	}
	// The same statements read; how they ran may differ (a shard does
	// not follow the others' writes).
	if a, b := one.Statements, m.Statements; a.Total != b.Total {
		t.Errorf("statements: single %+v, merged %+v", a, b)
	}
	if a, b := one.Sessions.Total, m.Sessions.Total; a != b || m.Sessions.ConnectFailed != 0 {
		t.Errorf("sessions: single %d, merged %d (%d could not connect)", a, b, m.Sessions.ConnectFailed)
	}
}
