package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/headroom"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// TestHeadroomShards: headroom --shards 2 --coord-dsn replays every step
// as two shards at once, meeting in a coordination database of their own
// (another cluster than the target's): every step's result is the merge
// of both shards of one run (its part covers shards 0 and 1 of 2, one
// barrier), each 1x round runs every statement of the log once, and the
// search answers.
func TestHeadroomShards(t *testing.T) {
	logPath := shopLog(t)
	tg := shopHeadroomTarget(t, nil)
	co := pgclustertest.StartT(t, pgcluster.Options{})
	if err := co.Exec(context.Background(), "postgres", "CREATE DATABASE coord"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	jsonPath, outDir := filepath.Join(dir, "headroom.json"), filepath.Join(dir, "steps")
	start := time.Now()
	code, stdout, stderr := runHeadroom(t, "--control", tg.DSN("postgres"), "--shards", "2", "--coord-dsn", co.DSN("coord"),
		"--max-k", "2", "--base-rounds", "2", "--boundary-rounds", "1", "--out", outDir, "--json", jsonPath, logPath)
	t.Logf("exit %d in %v\n%s\n%s", code, time.Since(start).Round(time.Second), stdout, stderr)
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(stderr, "every step in 2 shards at once") {
		t.Errorf("the start line does not say the steps are sharded")
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var out headroom.Outcome
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	so := out.Side(headroom.Control)
	if out.Shards != 2 {
		t.Errorf("the outcome says %d shards, want 2", out.Shards)
	}
	if so == nil || so.Answer == nil || so.Baseline == nil || len(so.Steps) < 3 {
		t.Fatalf("side %+v", so)
	}
	var base int64
	for _, st := range so.Steps {
		m := st.Measurement
		if st.Status != headroom.StatusDone || m == nil || m.Statements == 0 || st.File == "" {
			t.Fatalf("step %d: %+v", st.Seq, st)
		}
		if m.Failed != 0 {
			t.Errorf("step %d at %gx: %d statements failed", st.Seq, st.K, m.Failed)
		}
		if st.K == 1 {
			if base != 0 && m.Statements != base {
				t.Errorf("step %d at 1x: %d statements, the first round %d", st.Seq, m.Statements, base)
			}
			base = m.Statements
		}
		data, err := os.ReadFile(filepath.Join(outDir, st.File))
		if err != nil {
			t.Fatal(err)
		}
		res, err := results.Decode(data, st.File)
		if err != nil {
			t.Fatal(err)
		}
		if p := res.Part; p == nil || p.Of != 2 || len(p.Shards) != 2 || p.Run == "" || p.Barrier == nil {
			t.Errorf("step %d: part %+v, want both shards of 2 of one run, with its barrier", st.Seq, res.Part)
		}
	}
}
