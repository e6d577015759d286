package fixes

import (
	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/explain"
	"github.com/pgrehearse/pgrehearse/internal/findings"
)

// Choice is what rehearse chooses its fixes from (Choose).
type Choice struct {
	// Plans, when set, are the regressions' plans, whose causes have
	// fixes (Plan).
	Plans *explain.Report
	// Restart: the candidate's reset restarts the server, so a setting
	// that needs a restart is tried (WithRestart).
	Restart bool
	// Findings, when set, are the findings whose fixes are tried too
	// (FromFindings), in Database.
	Findings *findings.Report
	Database string
	// Max bounds the fixes tried (Bound), 0: all.
	Max int
}

// Choose returns the fixes rehearse tries after the comparison rep: the
// plans' causes', then the findings', the max of them adding the most
// time tried, whatever found them (--max-fixes counts both), and those
// named but not tried after them.
func Choose(rep *compare.Report, c Choice) []Fix {
	var planned []Fix
	if c.Plans != nil {
		planned = Plan(rep, c.Plans, 0)
		if c.Restart {
			planned = WithRestart(planned)
		}
	}
	if c.Findings != nil {
		planned = append(planned, FromFindings(c.Findings, rep, c.Database, planned)...)
	}
	return Bound(planned, c.Max)
}
