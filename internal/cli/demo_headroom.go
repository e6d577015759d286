package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/pgrehearse/pgrehearse/internal/demo"
	"github.com/pgrehearse/pgrehearse/internal/headroom"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/report"
)

// demoHeadroom searches the headroom of the demo's control and candidate
// with production's log, each step from the clusters' data directories
// restored, their own logs timing the statements, and says the answer.
func demoHeadroom(ctx context.Context, stdio IO, say func(string, ...any), f demoFlags, ctl, cand *pgcluster.Cluster, prodLog string, out func(string) string) error {
	args := []string{"headroom", "--reset", "datadir", "--control-cluster", ctl.Dir(), "--candidate-cluster", cand.Dir(),
		"--control-log", filepath.Join(ctl.LogDir(), "*.log"), "--candidate-log", filepath.Join(cand.LogDir(), "*.log"),
		"--target-log-prefix", demo.Prefix, "--speed", strconv.FormatFloat(f.speed, 'g', -1, 64),
		"--max-k", strconv.Itoa(demo.HeadroomMaxK), "--out", out("steps"),
		"--json", out("headroom.json"), "--html", out("headroom.html")}
	if demo.Capture(f.capture) == demo.CaptureLog {
		args = append(args, "--format", "stderr", "--prefix", demo.Prefix)
	}
	args = append(args, prodLog)
	say("pgrehearse %s", shellJoin(args))
	if code := Run(ctx, stdio, args); code != ExitOK {
		return &exitError{code: code, err: fmt.Errorf("demo: headroom failed (exit code %d)", code)}
	}
	b, err := os.ReadFile(out("headroom.json"))
	if err != nil {
		return err
	}
	var o headroom.Outcome
	if err := json.Unmarshal(b, &o); err != nil {
		return fmt.Errorf("%s: %w", out("headroom.json"), err)
	}
	say("headroom: %s", report.HeadroomLine(&o))
	say("report: %s", out("headroom.html"))
	return nil
}
