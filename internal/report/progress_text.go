package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/headroom"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/replayrun"
	"github.com/pgrehearse/pgrehearse/internal/rounds"
	"github.com/pgrehearse/pgrehearse/internal/shard"
)

// ReplayProgress is the live line of a replay under way: how far into
// the log, how much of it read, statements a second (rate), sessions,
// errors, failed connections and lag.
func ReplayProgress(p replayrun.Progress, read, total int64, rate float64) string {
	var b strings.Builder
	b.WriteString("replay ")
	if p.LogStart != 0 && p.LogReplayed >= p.LogStart {
		fmt.Fprintf(&b, "log +%v in %v", (time.Duration(p.LogReplayed-p.LogStart) * time.Microsecond).Truncate(time.Second), p.Elapsed.Truncate(time.Second))
	} else {
		fmt.Fprintf(&b, "%v", p.Elapsed.Truncate(time.Second))
	}
	if total > 0 {
		fmt.Fprintf(&b, " (read %.0f%%)", 100*float64(read)/float64(total))
	}
	fmt.Fprintf(&b, " | %.0f stmt/s | %d sessions open | %d errors", rate, p.Open, p.Errors)
	if p.ConnectFailures > 0 {
		fmt.Fprintf(&b, " | %d CONNECT FAILURES", p.ConnectFailures)
	}
	if p.LagP99MS > 0 {
		fmt.Fprintf(&b, " | p99 lag %.1f ms", p.LagP99MS)
	}
	return b.String()
}

// StepSummary is what a headroom step measured and its verdict, for
// the step's progress line.
func StepSummary(s *headroom.Step) string {
	m := s.Measurement
	if m == nil {
		return string(s.Status)
	}
	base := fmt.Sprintf("%.0f statements/s, errors %.2f%%, lag p99 %.1f ms", m.StatementsPerS, m.ErrorRate, m.LagP99MS)
	v := s.Verdict
	if v == nil {
		return "baseline, " + base
	}
	word := "held"
	if !v.Held {
		word = "BROKE"
	}
	if v.Bound != judge.BoundTarget {
		word += " (bound by " + strings.ReplaceAll(string(v.Bound), "_", " ") + ")"
	}
	return fmt.Sprintf("%s at %.2fx achieved, %s", word, v.AchievedK, base)
}

// WriteShardPlan writes what a shard plan places where, and the share
// of the sync dependencies that cross shards.
func WriteShardPlan(w io.Writer, p *shard.Plan, out string) {
	fmt.Fprintf(w, "shard plan %s: %d shards, written to %s\n", p.ID, p.Shards, out)
	for _, l := range p.Loads {
		fmt.Fprintf(w, "  shard %d: %d sessions, %d statements, %.1f s busy (%.1f%% of the work)\n",
			l.Shard, l.Sessions, l.Statements, l.BusyMS/1000, 100*l.Share)
	}
	d := p.Dependencies
	fmt.Fprintf(w, "  sync dependencies: %d, of which %d (%.1f%%) cross shards; a split by hash would leave %.1f%% across\n",
		d.Total, d.Cross, 100*d.CrossShare, 100*d.HashCrossShare)
	if d.Untracked > 0 {
		fmt.Fprintf(w, "  %d dependencies were past the bound on session pairs: counted, not placed\n", d.Untracked)
	}
	if p.Hashed > 0 {
		fmt.Fprintf(w, "  %d sessions were past the bound on sessions: placed by hash\n", p.Hashed)
	}
}

// WriteHeadroomProgress writes a line when each step ends (and when a reset
// starts, for a long one), with the estimate of the time left.
func WriteHeadroomProgress(w io.Writer, p headroom.Progress) {
	st := p.Step
	side := string(st.Side)
	if st.Try != "" {
		side += " with " + st.Try
	}
	left := "time left unknown"
	if p.RemainingKnown {
		left = fmt.Sprintf("at most about %v left (ETA %s)", p.Remaining.Round(time.Second), time.Now().Add(p.Remaining).Format("15:04:05"))
	}
	switch p.Phase {
	case rounds.PhaseReplay:
		fmt.Fprintf(w, "headroom: step %d: %s at %gx (round %d): replaying (reset took %v)\n", st.Seq, side, st.K, st.Round,
			time.Duration(st.Reset.Seconds*float64(time.Second)).Round(time.Millisecond))
	case rounds.PhaseDone:
		fmt.Fprintf(w, "headroom: step %d: %s at %gx: %s; %v since the start, %s\n", st.Seq, side, st.K, StepSummary(p.Done),
			p.Elapsed.Round(time.Second), left)
	}
}
