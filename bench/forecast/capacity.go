package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pgrehearse/pgrehearse/internal/headroom"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
)

// The capacity (issue 76, item 5): the application run at growing
// arrival rates on the control and on the candidate, each step from the
// restored snapshot, until it falls behind, beside headroom's forecast
// of the same two targets from production's log.

// capacityKs are the load factors (times the application's rate) the
// truth tries, headroom's own grid; -capacity-max-k ends it.
var capacityKs = []float64{1, 1.5, 2, 3, 4, 6, 8, 12, 16}

// Falling behind: the application processed less than behindShare of
// the transactions asked, or its mean schedule lag passed behindLagMS
// (headroom's --max-lag default).
const (
	behindShare = 0.9
	behindLagMS = 100
)

// capacityStep is one run of the application at k times its rate.
type capacityStep struct {
	K     float64 `json:"k"`
	Asked float64 `json:"asked_tps"`
	TPS   float64 `json:"tps"`
	LagMS float64 `json:"mean_lag_ms"`
	Held  bool    `json:"held"`
}

// capacitySide is one side's truth: the largest k that held and the
// first that fell behind (0: none up to the largest tried).
type capacitySide struct {
	Side   string         `json:"side"`
	Steps  []capacityStep `json:"steps"`
	HeldK  float64        `json:"held_k"`
	BrokeK float64        `json:"broke_k,omitempty"`
	// Headroom is headroom's answer for the side; nil without one.
	Headroom *headroom.Answer `json:"headroom,omitempty"`
}

// capacityResult is the capacity's part of result.json.
type capacityResult struct {
	Sides    []capacitySide `json:"sides"`
	Headroom []string       `json:"headroom_command"`
	ExitCode int            `json:"headroom_exit_code"`
}

// held says whether a step kept up with what it was asked.
func held(asked, tps, lagMS float64) bool {
	return tps >= behindShare*asked && lagMS <= behindLagMS
}

// capacitySearch runs the truth's search on both sides, then headroom.
func capacitySearch(ctx context.Context, o options, a *application, c change, dir string, clusters []*pgcluster.Cluster, snaps []*pgcluster.Snapshot, scripts []string, prodLog string) (*capacityResult, error) {
	res := &capacityResult{}
	if err := os.MkdirAll(filepath.Join(dir, "capacity"), 0o755); err != nil {
		return nil, err
	}
	for i, side := range []string{sideControl, sideCand} {
		cs := capacitySide{Side: side}
		for _, k := range capacityKs {
			if k > o.capacityMaxK {
				break
			}
			asked := k * o.rate
			say("%s %s: capacity, %s at %.1fx (%.0f transactions/s)", a.name, c.name, side, k, asked)
			if err := clusters[i].Restore(ctx, snaps[i]); err != nil {
				return nil, err
			}
			prefix := filepath.Join(dir, "capacity", fmt.Sprintf("%s-k%g", side, k))
			tps, _, err := runApp(ctx, clusters[i], a, scripts, appRun{clients: o.clients, threads: o.threads, rate: asked, duration: o.duration, logPrefix: prefix})
			if err != nil {
				return nil, err
			}
			files, err := filepath.Glob(prefix + ".*")
			if err != nil || len(files) == 0 {
				return nil, fmt.Errorf("pgbench wrote no per-transaction log at %s.*", prefix)
			}
			_, lag, txs, err := appLatencies(a, files)
			if err != nil {
				return nil, err
			}
			st := capacityStep{K: k, Asked: asked, TPS: tps, LagMS: meanLag(lag, txs)}
			st.Held = held(asked, tps, st.LagMS)
			cs.Steps = append(cs.Steps, st)
			if !st.Held {
				cs.BrokeK = k
				break
			}
			cs.HeldK = k
		}
		res.Sides = append(res.Sides, cs)
	}
	for i := range clusters {
		if err := clusters[i].Restore(ctx, snaps[i]); err != nil {
			return nil, err
		}
	}
	say("%s %s: capacity, headroom's forecast", a.name, c.name)
	out := filepath.Join(dir, "headroom.json")
	var err error
	res.Headroom, res.ExitCode, err = runHeadroom(ctx, o, dir, clusters, prodLog, out)
	if err != nil {
		return res, err
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return res, err
	}
	var hr headroom.Outcome
	if err := json.Unmarshal(b, &hr); err != nil {
		return res, fmt.Errorf("%s: %w", out, err)
	}
	for _, so := range hr.Sides {
		for i := range res.Sides {
			if string(so.Side) == res.Sides[i].Side {
				res.Sides[i].Headroom = so.Answer
			}
		}
	}
	return res, nil
}

// meanLag is the mean schedule lag over every transaction type.
func meanLag(lag map[string]float64, txs map[string]int64) float64 {
	var sum float64
	var n int64
	for name, c := range txs {
		sum += lag[name] * float64(c)
		n += c
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

func runHeadroom(ctx context.Context, o options, dir string, clusters []*pgcluster.Cluster, prodLog, out string) ([]string, int, error) {
	args := []string{"headroom", "--reset", "datadir", "--control-cluster", clusters[0].Dir(), "--candidate-cluster", clusters[1].Dir(),
		"--format", "stderr", "--prefix", logPrefix, "--max-k", fmt.Sprint(o.capacityMaxK), "--json", out}
	args = append(append(args, o.headroomArgs...), prodLog)
	// 3: a target below --require; 5: partial. Both answered.
	return runPgrehearse(ctx, o.pgrehearse, dir, "headroom", args, func(code int) bool { return code == 3 || code == 5 })
}

// capacityLines says, per side, the truth's capacity beside headroom's.
func (r *capacityResult) lines() []string {
	var lines []string
	for _, s := range r.Sides {
		truth := fmt.Sprintf("held %gx", s.HeldK)
		if s.HeldK == 0 {
			truth = "fell behind at 1x"
		} else if s.BrokeK > 0 {
			truth += fmt.Sprintf(", fell behind at %gx", s.BrokeK)
		} else {
			truth += " (the largest tried)"
		}
		fc := "none"
		if h := s.Headroom; h != nil {
			fc = fmt.Sprintf("%.2fx (%.2fx-%.2fx)", h.Holds, h.Lo, h.Hi)
			if h.AtLeast {
				fc = fmt.Sprintf("at least %.2fx", h.Lo)
			}
		}
		lines = append(lines, fmt.Sprintf("capacity, %s (times the application's rate): true %s; headroom %s", s.Side, truth, fc))
	}
	return lines
}
