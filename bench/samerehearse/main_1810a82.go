//go:build ref1810a82

// samerehearse against the reference commit 1810a82's API (built there
// by bench/samejson.sh with -tags ref1810a82): the same judging and the
// same document as main.go, as rehearse --json wrote it at that commit
// (internal/cli's rehearseOutput then: the comparison, the findings, the
// plans and the index; no fixes).

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/explain"
	"github.com/pgrehearse/pgrehearse/internal/findings"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/rehearse"
	"github.com/pgrehearse/pgrehearse/internal/report"
)

// output is rehearse --json's document at 1810a82.
type output struct {
	*report.ComparisonJSON
	Findings  *findings.Report  `json:"findings,omitempty"`
	Plans     *explain.Report   `json:"plans,omitempty"`
	Rehearsal *rehearse.Outcome `json:"rehearsal"`
}

func main() {
	failOn := flag.String("fail-on", "", "rehearse --fail-on")
	minEffectMS := flag.Float64("min-effect-ms", compare.DefaultMinEffectMS, "rehearse --min-effect-ms")
	minCalls := flag.Int64("min-calls", 10, "rehearse --min-calls")
	catalog := flag.String("catalog", "", "the candidate's catalog for the findings (rehearse --findings-dsn); none: the findings that need it are left out")
	flag.Parse()
	if flag.NArg() != 1 {
		fail(fmt.Errorf("usage: samerehearse [flags] DIR"))
	}
	out, err := rehearse.ReadOutcome(flag.Arg(0))
	if err != nil {
		fail(err)
	}
	var ruleText []string
	if *failOn != "" {
		ruleText = []string{*failOn}
	}
	rules, err := compare.ParseRules(ruleText)
	if err != nil {
		fail(err)
	}
	minMS := *minEffectMS
	if minMS == 0 {
		minMS = -1 // none, as asked
	}
	opts := judge.Options{Compare: out.CompareOptions(compare.Options{MinCalls: *minCalls, MinEffectMS: minMS, Rules: rules,
		AllowIncomplete: out.Partial, ExpectWork: true}),
		Findings: &judge.FindingsOptions{Catalog: judge.Catalog{DSN: *catalog}}}
	v, err := judge.Judge(context.Background(), judge.NewRuns(out.Control), judge.NewRuns(out.Candidate), opts)
	if err != nil {
		fail(err)
	}
	doc := output{Rehearsal: out, ComparisonJSON: report.ComparisonDocument(v.Comparison), Findings: v.Findings}
	if v.Plans != nil {
		doc.Plans = v.Plans.Report
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "samerehearse:", err)
	os.Exit(1)
}
