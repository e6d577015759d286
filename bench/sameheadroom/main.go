// Command sameheadroom runs headroom's search again over the steps a
// headroom run kept (headroom --out DIR: step-NN-SIDE-kK.json), without
// replaying anything, and writes the run's JSON (headroom --json's, to
// standard output) and its summary (to standard error): the whole
// headroom output from stored inputs, so that two versions of pgrehearse
// can be compared byte for byte. bench/samejson.sh builds it in both
// trees (it compiles against the reference commit 1810a82 as it is).
//
// Each step the search asks for (its sequence number, side and load
// factor) is read from DIR; a step that is not there fails the run, so a
// search that asks for other steps than the stored run's says so. The
// search, every step's measurement and verdict, the baseline, the
// answer, the first break, the USL fit, the peak and the knee are the
// library's, as headroom makes them. What is not (the clock and the
// server's CPU) is left out: each step's started_at, reset_seconds and
// replay_seconds and the run's started_at and ended_at are zero, and the
// server's CPU is not measured (a replay from a file has no server), so
// no step is judged bound by the server's CPU.
//
// Usage: sameheadroom [flags] DIR
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/headroom"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/report"
	"github.com/pgrehearse/pgrehearse/internal/reset"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// stored is a reset that does nothing: the steps' results are read from
// files. It says the mode the stored run's reset had.
type stored struct{ mode reset.Mode }

func (s stored) Mode() reset.Mode                         { return s.mode }
func (stored) Prepare(context.Context) error              { return nil }
func (stored) Release(context.Context, reset.State) error { return nil }
func (stored) Close(context.Context) error                { return nil }
func (s stored) Reset(_ context.Context, round int) (reset.State, error) {
	return reset.State{Mode: s.mode, Round: round}, nil
}

func main() {
	sloText := flag.String("slo", "p95<+50%,errors<+0.1pp", "the SLO, as headroom --slo")
	by := flag.String("by", "speed", "headroom --by")
	speed := flag.Float64("speed", 1, "headroom --speed")
	maxK := flag.Float64("max-k", headroom.DefaultMaxK, "headroom --max-k")
	baseRounds := flag.Int("base-rounds", headroom.DefaultBaseRounds, "headroom --base-rounds")
	boundaryRounds := flag.Int("boundary-rounds", headroom.DefaultBoundaryRounds, "headroom --boundary-rounds")
	span := flag.Float64("span", 0, "the log's length at k = 1 in seconds (the stored run's span_seconds)")
	cores := flag.Int("cores", 2, "the replayer's CPUs (the stored run's GOMAXPROCS)")
	sides := flag.String("sides", "control=datadir,candidate=datadir", "the sides in turn, each with its reset's mode")
	flag.Parse()
	if flag.NArg() != 1 {
		fail(fmt.Errorf("usage: sameheadroom [flags] DIR"))
	}
	dir := flag.Arg(0)
	slo, err := judge.ParseSLO(*sloText)
	if err != nil {
		fail(err)
	}
	var targets []headroom.Target
	for _, s := range strings.Split(*sides, ",") {
		side, mode, _ := strings.Cut(s, "=")
		// No server: the DSN only stands for one.
		targets = append(targets, headroom.Target{Side: headroom.Side(side), DSN: "stored:" + side, Reset: stored{reset.Mode(mode)}})
	}
	cfg := headroom.Config{
		Targets: targets, SLO: slo, By: headroom.By(*by), Speed: *speed,
		Search: headroom.Search{MaxK: *maxK, BaseRounds: *baseRounds, BoundaryRounds: *boundaryRounds},
		Span:   time.Duration(*span * float64(time.Second)), Cores: *cores,
		Replay: func(_ context.Context, st headroom.StepRun, _ headroom.Target) (*results.Result, error) {
			return results.ReadFile(filepath.Join(dir, fmt.Sprintf("step-%02d-%s-k%g.json", st.Seq, st.Side, st.K)))
		},
	}
	if cfg.By == headroom.ByFold {
		// As headroom's CLI at 1810a82 set it (the library sets it
		// since).
		cfg.Search.Integer = true
	}
	out, err := headroom.Run(context.Background(), cfg)
	if out == nil {
		fail(err)
	}
	// The clock's fields: the render's, not the stored run's.
	out.StartedAt, out.EndedAt = time.Time{}, time.Time{}
	for _, s := range out.Sides {
		for i := range s.Steps {
			st := &s.Steps[i]
			st.StartedAt, st.ResetSeconds, st.ReplaySeconds = time.Time{}, 0, 0
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if werr := enc.Encode(out); werr != nil {
		fail(werr)
	}
	if werr := report.WriteHeadroom(os.Stderr, out); werr != nil {
		fail(werr)
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "sameheadroom:", err)
	os.Exit(1)
}
