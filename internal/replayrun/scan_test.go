package replayrun_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/replay"
	"github.com/pgrehearse/pgrehearse/internal/replayrun"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

// TestScanThinkTime: the time sessions spent between their statements
// inside transaction blocks (results.ThinkTime), from a log whose times
// are known: a block's time runs from the start of its BEGIN (the line's
// time less its duration) to the end of what ended it, and its gaps are
// what lies between one statement's end and the next one's start.
func TestScanThinkTime(t *testing.T) {
	const prefix = "2024-05-01 10:00:"
	line := func(at, pid, ms, what string) string {
		return prefix + at + " UTC [" + pid + "] app@shop/psql 6631f000." + pid + " LOG:  duration: " + ms + " ms  statement: " + what + "\n"
	}
	cases := []struct {
		name            string
		log             string
		blocks          int64
		blockMS, gapsMS float64
	}{
		{"no block", line("00.010", "65", "1.000", "SELECT 1") + line("00.020", "65", "1.000", "SELECT 2"), 0, 0, 0},
		{"one block, think inside",
			// BEGIN 0.000-0.001; SELECT 0.004-0.005 (3 ms gap);
			// UPDATE 0.008-0.010 (3 ms); COMMIT 0.011-0.012 (1 ms).
			line("00.001", "65", "1.000", "BEGIN") + line("00.005", "65", "1.000", "SELECT * FROM a WHERE id = 1 FOR UPDATE") +
				line("00.010", "65", "2.000", "UPDATE a SET n = n + 1 WHERE id = 1") + line("00.012", "65", "1.000", "COMMIT"),
			1, 12, 7},
		{"a gap outside a block is not think time",
			line("00.001", "65", "1.000", "BEGIN") + line("00.002", "65", "1.000", "COMMIT") + line("00.500", "65", "1.000", "SELECT 1"),
			1, 2, 0},
		{"two sessions interleaved, one whole statement block",
			line("00.001", "65", "1.000", "BEGIN") + line("00.002", "66", "2.000", "BEGIN; UPDATE a SET n = 0; COMMIT") +
				line("00.006", "65", "1.000", "ROLLBACK"),
			2, 6 + 2, 4},
		{"a block open at the end of the log does not count",
			line("00.001", "65", "1.000", "BEGIN") + line("00.009", "65", "1.000", "SELECT 1"), 0, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "postgresql.log")
			if err := os.WriteFile(path, []byte(c.log), 0o600); err != nil {
				t.Fatal(err)
			}
			sc, err := replayrun.Scan(context.Background(), replayrun.Config{Input: source.Paths{path}, Replay: replay.Options{DryRun: true, Speed: 1}})
			if err != nil {
				t.Fatal(err)
			}
			th := sc.Think
			if th.Blocks != c.blocks || math.Abs(th.BlockSeconds*1000-c.blockMS) > 1e-6 || math.Abs(th.GapSeconds*1000-c.gapsMS) > 1e-6 {
				t.Errorf("blocks %d, %.3f ms, gaps %.3f ms; want %d, %g ms, %g ms", th.Blocks, th.BlockSeconds*1000, th.GapSeconds*1000, c.blocks, c.blockMS, c.gapsMS)
			}
		})
	}
}
