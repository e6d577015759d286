package archdoc

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// configuredOnlyThrough are, per package, the engines it must not import
// (its tests may): internal/cli configures a replay through replayrun,
// which re-exports the names of the engine (internal/replay), of its
// target's log (replay/targetlog) and of the commit order (syncdep) that
// a command's flags need (replayrun/engine.go), and runs every load
// through it (replayrun.Load, replayrun.ShardReplay), so that the CLI
// parses flags and renders, and the engine's vocabulary crosses into it
// in one place.
var configuredOnlyThrough = map[string][]string{
	"internal/cli": {"internal/replay", "internal/replay/targetlog", "internal/syncdep"},
}

// TestCLIReachesEngineThroughReplayrun checks that no package imports
// (outside its tests) what configuredOnlyThrough keeps from it, and that
// every package named there exists.
func TestCLIReachesEngineThroughReplayrun(t *testing.T) {
	checkImportRule(t, "configuredOnlyThrough", "cli_test.go", configuredOnlyThrough, false,
		"configure the replay through internal/replayrun (its Options, modes and defaults are re-exported in replayrun/engine.go) and make loads with replayrun.Load and replayrun.ShardReplay")
}

// maxCLILines is the most lines internal/cli's Go files may hold, tests
// left out: past it, the commands are doing a library's work (a run, a
// load, a judgment) or a renderer's (text that belongs in
// internal/report), which is where it goes.
const maxCLILines = 6000

// TestCLILines checks that internal/cli's non-test Go files hold at most
// maxCLILines lines, counted as wc -l counts them.
func TestCLILines(t *testing.T) {
	n, err := goLines(filepath.Join(root(t), "internal", "cli"))
	if err != nil {
		t.Fatal(err)
	}
	if n > maxCLILines {
		t.Errorf("internal/cli holds %d lines of Go outside its tests, over %d: move what is not flags, calls and exit codes into a library (replayrun, rehearse, headroom, demo...) or its text into internal/report", n, maxCLILines)
	}
}

// goLines counts the lines of the Go files directly in dir, tests left
// out.
func goLines(dir string) (int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return 0, err
		}
		n += bytes.Count(b, []byte("\n"))
	}
	return n, nil
}
