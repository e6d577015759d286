package cli

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/rehearse"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// TestRehearseLoadMode is issue 58's acceptance test of item 2 through
// rehearse itself (a long case: TestReplaySyncFlags has the same
// workload through replay in make test). A writer inserts a row every
// 100 ms and a reader counts them 50 ms after each; the candidate's
// trigger makes every insert take 150 ms. In the rehearsal's rounds
// (load mode, the default) the reader waits for nothing on either side;
// with --sync object it waits for the late writer on the candidate, and
// the verdict says the candidate was throttled by the replay itself, and
// never passes.
func TestRehearseLoadMode(t *testing.T) {
	longCase(t)
	ctl := pgclustertest.StartT(t, pgcluster.Options{})
	cand := pgclustertest.StartT(t, pgcluster.Options{})
	for i, c := range []*pgcluster.Cluster{ctl, cand} {
		mustExec(t, c, "postgres", "CREATE ROLE u1 LOGIN", "CREATE DATABASE db1 OWNER u1")
		setup := "CREATE TABLE feed (id int PRIMARY KEY); GRANT ALL ON feed TO u1"
		if i == 1 {
			setup += `; CREATE FUNCTION slow_feed() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN PERFORM pg_sleep(0.15); RETURN NEW; END$$;
CREATE TRIGGER slow_feed BEFORE INSERT ON feed FOR EACH ROW EXECUTE FUNCTION slow_feed()`
		}
		mustExec(t, c, "db1", setup)
	}
	var feed []timedStatement
	for i := range 8 {
		feed = append(feed, timedStatement{0, 100 * i, fmt.Sprintf("INSERT INTO feed (id) VALUES (%d)", i)},
			timedStatement{1, 100*i + 50, "SELECT count(*) FROM feed"})
	}
	log := writeTimedLog(t, feed)
	for _, mode := range []results.SyncMode{results.SyncLoad, results.SyncObject} {
		for _, c := range []*pgcluster.Cluster{ctl, cand} {
			mustExec(t, c, "db1", "TRUNCATE feed")
		}
		dir := t.TempDir()
		args := []string{"--control", ctl.DSN("postgres"), "--candidate", cand.DSN("postgres"), "--rounds", "1", "--reset", "none",
			"--plans=false", "--fixes=false", "--findings=false", "--observe=false", "--max-lag", "0", "--prefix", replayTestPrefix,
			"--out", filepath.Join(dir, "rounds"), "--json", filepath.Join(dir, "rehearsal.json")}
		if mode != results.SyncLoad {
			args = append(args, "--sync", string(mode))
		}
		code, stdout, stderr := runRehearse(t, "", append(args, log)...)
		t.Logf("%s: exit %d\n%s\n%s", mode, code, stdout, stderr)
		back, err := rehearse.ReadOutcome(filepath.Join(dir, "rounds"))
		if err != nil {
			t.Fatal(err)
		}
		if len(back.Control) != 1 || len(back.Candidate) != 1 || back.Sync != mode || back.Throttle == nil {
			t.Fatalf("%s: %d+%d rounds, sync %q, throttle %+v", mode, len(back.Control), len(back.Candidate), back.Sync, back.Throttle)
		}
		c := back.Candidate[0]
		if c.Statements.Failed != 0 || back.Control[0].Statements.Failed != 0 {
			t.Errorf("%s: failed statements: %v, %v", mode, back.Control[0].ErrorsBySQLState, c.ErrorsBySQLState)
		}
		throttled := strings.Contains(stdout, "THROTTLED: the candidate's rounds were throttled by the replay itself")
		switch mode {
		case results.SyncLoad:
			if c.Sync.Waited != 0 || back.Control[0].Sync.Waited != 0 {
				t.Errorf("load: the reader waited %d times on the candidate, %d on the control; want never", c.Sync.Waited, back.Control[0].Sync.Waited)
			}
			if back.Throttle.WaitsDominate {
				t.Errorf("load: waits dominate: %+v", back.Throttle)
			}
		default:
			if c.Sync.Waited < 6 || c.SyncWait == nil || c.SyncWait.TotalMS < 1000 {
				t.Errorf("object: the reader waited %d times, %+v on the candidate: want it held back by the writer", c.Sync.Waited, c.SyncWait)
			}
			if !back.Throttle.Throttled || !throttled || !strings.Contains(stdout, "--sync object ordered reads too") {
				t.Errorf("object: the verdict does not say the candidate was throttled: %+v", back.Throttle)
			}
			// Its latencies are lower bounds: never a pass.
			if code == ExitOK || code != ExitRegression && !strings.Contains(stdout, "were throttled by the replay itself (sync waits") {
				t.Errorf("object: a candidate throttled by the replay's waits exited %d", code)
			}
		}
	}
}
