package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/observe"
)

// WriteEvidence writes a terminal summary of server-side evidence:
// throughput, the top waits, the top queries by total time, warnings and
// what observing cost.
func WriteEvidence(w io.Writer, e *observe.Evidence, top int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Server-side evidence (%s, %s from %s)\n", seconds(e.DurationS), e.Capabilities.Database, e.Start)
	if tp := e.Throughput; tp != nil {
		maxConns := int64(0)
		for _, c := range tp.ConnectionsMax {
			maxConns = max(maxConns, c)
		}
		fmt.Fprintf(&b, "  throughput     %s transactions/s (%d transactions, %d rollbacks), up to %d connections\n",
			num(tp.MeanTPS), tp.TotalTransactions, tp.TotalRollbacks, maxConns)
	}
	wt := e.Waits
	if wt.Rounds > 0 {
		fmt.Fprintf(&b, "  wait events    from %s every %s: %s %s on average, %d samples in %d rounds",
			wt.Source, ms(wt.SampleIntervalMS), num(float64(wt.Samples)/float64(wt.Rounds)), sessionsWord(wt), wt.Samples, wt.Rounds)
		for i, ev := range wt.Events {
			if i == 5 {
				break
			}
			if i == 0 {
				b.WriteString(":")
			} else {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, " %s %s", waitName(ev.Type, ev.Event), pct(ev.Share))
		}
		b.WriteString("\n")
	}
	if st := e.Statements; st != nil {
		plan := ""
		if !st.TrackPlanning {
			plan = " (planning not tracked)"
		}
		fmt.Fprintf(&b, "  statements     %d calls of %d queries, %s executing, %s planning%s\n",
			st.Totals.Calls, len(st.Queries)+st.OmittedQueries, msText(st.Totals.TotalExecMS), msText(st.Totals.TotalPlanMS), plan)
		for i, q := range st.Queries {
			if i == top {
				break
			}
			fmt.Fprintf(&b, "    %10s ms %8d calls  %8s ms/call  plan %8s ms  %s\n",
				num(q.TotalExecMS+q.TotalPlanMS), q.Calls, num(q.MeanExecMS), num(q.TotalPlanMS), shorten(q.Query, 70))
		}
	} else {
		fmt.Fprintf(&b, "  statements     pg_stat_statements %s\n", e.Capabilities.PGSS)
	}
	fmt.Fprintf(&b, "  observer       busy %s (%.2f%% of the time), %d samples every %s (max gap %s), %d pg_stat_statements snapshots\n",
		msText(e.Sampling.BusyMS), 100*e.Sampling.BusyShare, e.Sampling.Rounds, ms(e.Sampling.AchievedIntervalMS), ms(e.Sampling.MaxGapMS), e.Sampling.PGSSSnapshots)
	for _, warn := range e.Warnings {
		fmt.Fprintf(&b, "  WARNING: %s\n", warn)
	}
	for _, n := range e.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// waitName is "type/event", or "CPU" for a backend waiting on nothing.
func waitName(typ, event string) string {
	if typ == event {
		return typ
	}
	return typ + "/" + event
}

// sessionsWord is what the wait samples count: active sessions, or
// sessions in a wait when the source does not sample CPU.
func sessionsWord(w observe.Waits) string {
	if w.CPUSampled {
		return "active sessions"
	}
	return "sessions waiting"
}
