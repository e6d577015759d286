package rehearsal

import (
	"fmt"
	"io"

	"github.com/pgrehearse/pgrehearse/internal/rehearse"
	"github.com/pgrehearse/pgrehearse/internal/replayrun"
	"github.com/pgrehearse/pgrehearse/internal/report"
)

// TargetLacks writes what the observer lacks on each target (a warning)
// and returns the lines of what the targets lack for the rehearsal's
// options (rehearse.CheckTargets), each naming its target: a server
// that refuses every login alike is said once, with how many more it
// refused.
func TargetLacks(w io.Writer, lacks []rehearse.Lacks, h report.LoginHints) []string {
	var out []string
	for _, l := range lacks {
		var need []string
		alike := 0
		for _, c := range l.Refused {
			if replayrun.ServerProblem(c.Problem) {
				if alike++; alike > 1 {
					continue
				}
			}
			need = append(need, report.DescribeCheck(c, h))
		}
		if alike > 1 {
			need = append(need, report.LoginsAlike(alike-1))
		}
		if l.Slots != nil {
			need = append(need, report.SlotsProblem(l.Slots))
		}
		need = append(need, l.Template...)
		for _, m := range l.TargetLog {
			need = append(need, fmt.Sprintf("--%s-log: the target's log cannot give server-side durations: %s", l.Side, m))
		}
		for _, m := range need {
			out = append(out, fmt.Sprintf("the %s target: %s", l.Side, m))
		}
		for _, m := range l.Observe {
			fmt.Fprintf(w, "pre-flight: WARNING: the %s target, for the server-side evidence (--observe): %s\n", l.Side, m)
		}
	}
	return out
}
