package report

import (
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/explain"
	"github.com/pgrehearse/pgrehearse/internal/findings"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// ComparisonJSON is a comparison as `report --json` writes it
// (docs/report-json.md): compare's numbers and typed verdicts, with the
// words this package gives them beside (verdict.line, each warning, each
// query's note, each divergence's reason, each broken rule's detail).
type ComparisonJSON struct {
	*compare.Report
	Verdict        verdictJSON           `json:"verdict"`
	Warnings       []string              `json:"warnings,omitempty"`
	WarningDetails []compare.Warning     `json:"warning_details,omitempty"`
	Incomplete     []string              `json:"incomplete,omitempty"`
	IncompleteWhy  []compare.Unjudgeable `json:"incomplete_details,omitempty"`
	Queries        []queryJSON           `json:"queries"`
	Divergence     []divergenceJSON      `json:"divergence"`
}

type verdictJSON struct {
	compare.Verdict
	Line   string       `json:"line"`
	Broken []brokenJSON `json:"broken,omitempty"`
}

type brokenJSON struct {
	compare.Broken
	Detail string `json:"detail"`
}

type queryJSON struct {
	compare.QueryDiff
	Note string `json:"note,omitempty"`
}

type divergenceJSON struct {
	compare.Divergence
	Reason string `json:"reason"`
}

// ComparisonDocument words rep for its JSON form.
func ComparisonDocument(rep *compare.Report) *ComparisonJSON {
	d := &ComparisonJSON{Report: rep, Verdict: verdictJSON{Verdict: rep.Verdict, Line: VerdictLine(rep)},
		WarningDetails: rep.Warnings, IncompleteWhy: rep.Incomplete,
		Queries: make([]queryJSON, len(rep.Queries)), Divergence: make([]divergenceJSON, len(rep.Divergence))}
	for _, b := range rep.Verdict.Broken {
		d.Verdict.Broken = append(d.Verdict.Broken, brokenJSON{Broken: b, Detail: BrokenDetail(rep, b)})
	}
	for _, w := range rep.Warnings {
		d.Warnings = append(d.Warnings, WarningText(w))
	}
	for _, u := range rep.Incomplete {
		d.Incomplete = append(d.Incomplete, UnjudgeableText(u))
	}
	for i := range rep.Queries {
		q := &rep.Queries[i]
		d.Queries[i] = queryJSON{QueryDiff: *q, Note: strings.Join(QueryNotes(rep, q), "; ")}
	}
	for i, dv := range rep.Divergence {
		d.Divergence[i] = divergenceJSON{Divergence: dv, Reason: DivergenceReason(dv)}
	}
	return d
}

// VerdictJSON is a judged comparison in its JSON form: the comparison
// (ComparisonJSON), its findings under "findings" and the plans explained
// on both servers under "plans" (docs/plans-json.md).
type VerdictJSON struct {
	*ComparisonJSON
	Findings *findings.Report `json:"findings,omitempty"`
	Plans    *explain.Report  `json:"plans,omitempty"`
	// BatchInserts is what rehearse --batch-inserts measured.
	BatchInserts *findings.BatchMeasure `json:"batch_inserts,omitempty"`
}

// VerdictDocument words v for its JSON form.
func VerdictDocument(v *judge.Verdict) VerdictJSON {
	return VerdictJSON{ComparisonJSON: ComparisonDocument(v.Comparison), Findings: v.Findings, Plans: v.PlansReport(), BatchInserts: v.Batched}
}

// ResultJSON is an analysis or a replay in its JSON form: the result,
// and its findings under "findings" (the result cannot hold them: they
// are computed from it).
type ResultJSON struct {
	*results.Result
	Findings *findings.Report `json:"findings,omitempty"`
}
