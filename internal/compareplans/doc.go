// Package compareplans explains the plans behind a comparison: it picks
// the queries a comparison (package compare) found regressed (slower, or
// writing more WAL or dirtying more blocks per call) or diverged, and the
// top ones by the time they added, and asks package
// explain how the control and the candidate plan them, with the
// representative executions and the logged plans the results kept.
//
// It is package judge's (judge.Judge), which `report` and `rehearse`
// both call, so that both explain the same statements the same way. It returns typed data (explain's Report
// and the comparison's status of the fingerprints found slower or doing
// more work); package report words it.
//
// It must not print, name command-line flags, or write parameter
// values: the plans it returns are redacted (plan.Plan.Redact), whatever the
// results kept, because a report is read by more people than ran the
// rehearsal.
package compareplans
