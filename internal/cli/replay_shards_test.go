package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/replayrun"
)

// TestReplayShardFlags: the shard options are checked before anything
// runs, each mistake named by its flag.
func TestReplayShardFlags(t *testing.T) {
	log := writeSessionsLog(t, [][]string{{"u1", "db1", "SELECT 1"}, {"u2", "db1", "SELECT 2"}, {"u3", "db1", "SELECT 3"}})
	plan := filepath.Join(t.TempDir(), "plan.json")
	if code, out := runCmd(t, "plan", "--prefix", replayTestPrefix, "--shards", "2", "--out", plan, log); code != ExitOK {
		t.Fatalf("plan: exit %d:\n%s", code, out)
	}
	checkUsage(t, []usageCase{
		{[]string{"--dry-run", "--shard", "3/3"}, "shards are numbered from 0 to 2"},
		{[]string{"--dry-run", "--shard", "one"}, "write it K/N"},
		{[]string{"--dry-run", "--shard", "0/2", "--shards", "2"}, "give one"},
		{[]string{"--dry-run", "--shards", "2"}, "JOB_COMPLETION_INDEX is not set"},
		{[]string{"--dry-run", "--plan", plan}, "--plan needs the shard"},
		{[]string{"--dry-run", "--shard", "0/3", "--plan", plan}, "into 2 shards, not 3"},
		{[]string{"--dry-run", "--shard", "0/2", "--coord-dsn", "host=x"}, "--coord-dsn needs --run-id"},
		{[]string{"--dry-run", "--shard", "0/2", "--start-at", "noon"}, "give an RFC 3339 time"},
		{[]string{"--dry-run", "--start-at", "2026-01-01T00:00:00Z"}, "are for a replay split in shards"},
		{[]string{"--target", "host=/nonexistent", "--shard", "0/2", "--speed", "1"}, "needs one start with the other shards"},
		// The answers order, given, is refused for a shard alone before
		// anything connects (issue 77), saying what to give instead.
		{[]string{"--target", "host=/nonexistent", "--shard", "0/2", "--start-at", "2026-01-01T00:00:00Z", "--sync", "answers"}, "(--sync object, or --coord-dsn with --run-id)"},
		{[]string{"--dry-run", "--shard", "1/2", "--sync", "answers"}, "shard 1 of 2 cannot keep the answers order without a coordination database"},
	}, func(args []string) (int, string) {
		code, out, _ := runReplay(t, append(append([]string{"--prefix", replayTestPrefix}, args...), log)...)
		return code, out
	})

	// Two shards of a dry run, by plan: each keeps its own sessions, and
	// their merge is the whole; its metrics carry its shard.
	var parts []string
	dir := t.TempDir()
	total := int64(0)
	for _, k := range []string{"0/2", "1/2"} {
		out := filepath.Join(dir, strings.ReplaceAll(k, "/", "-")+".json")
		code, text := runCmd(t, "replay", "--dry-run", "--prefix", replayTestPrefix, "--shard", k, "--plan", plan, "--json", out, log)
		if code != ExitOK && code != ExitNoInput {
			t.Fatalf("shard %s: exit %d:\n%s", k, code, text)
		}
		res := readShardResult(t, out)
		if res.Part == nil || res.Part.Of != 2 || res.Part.Plan == "" || len(res.Shards) != 1 {
			t.Errorf("shard %s: part %+v, shards %+v", k, res.Part, res.Shards)
		}
		total += res.Statements.Total
		parts = append(parts, out)
	}
	if total != 3 {
		t.Errorf("the shards replayed %d statements in all, want 3", total)
	}
	merged := filepath.Join(dir, "merged.json")
	if code, text := runCmd(t, append([]string{"merge", "--json", merged}, parts...)...); code != ExitOK {
		t.Fatalf("merge: exit %d:\n%s", code, text)
	}
	if m := readShardResult(t, merged); !m.Part.Whole() || m.Statements.Total != 3 || len(m.Shards) != 2 {
		t.Errorf("merged: part %+v, %d statements, shards %+v", m.Part, m.Statements.Total, m.Shards)
	}
	// A shard of another run does not merge.
	other := filepath.Join(dir, "other.json")
	if code, text := runCmd(t, "replay", "--dry-run", "--prefix", replayTestPrefix, "--shard", "1/2", "--plan", plan,
		"--start-at", "2026-01-01T00:00:00Z", "--json", other, log); code != ExitOK && code != ExitNoInput {
		t.Fatalf("exit %d:\n%s", code, text)
	}
	if code, text := runCmd(t, "merge", "--json", filepath.Join(dir, "m2.json"), parts[0], other); code == ExitOK || !strings.Contains(text, "different barriers") {
		t.Errorf("merge of shards of different barriers: exit %d:\n%s", code, text)
	}
}

func TestMetricLabels(t *testing.T) {
	var cfg replayrun.Config
	if l := metricLabels(&cfg); l != nil {
		t.Errorf("not split: labels %v", l)
	}
	f := shardFlags{shards: 4, getenv: func(string) string { return "3" }}
	cfg.Replay.DryRun = true
	if err := f.apply(&cfg); err != nil {
		t.Fatal(err)
	}
	if l := metricLabels(&cfg); l["shard"] != "3" {
		t.Errorf("shard 3 of 4: labels %v", l)
	}
}
