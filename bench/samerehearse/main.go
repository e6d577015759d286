//go:build !ref1810a82

// Command samerehearse judges a rehearsal again from the rounds it kept
// (rehearse --out DIR, or demo --out DIR: DIR/rounds) and writes the JSON
// rehearse --json writes, to standard output: the rehearsal's index
// (rehearse.ReadOutcome), the comparison of its rounds, and the findings
// of the candidate's first round, as the rehearse command judges them
// (rehearse.Judge, the library call the command makes, with its flags'
// defaults: the same options, the same document), so that two
// versions of pgrehearse can be compared byte for byte on stored rounds
// without replaying (whose timings differ from run to run).
// bench/samejson.sh builds it in both trees: main_1810a82.go (build tag
// ref1810a82) is the same program against the reference commit's API.
//
// What the rehearse command adds from live servers is not made here: the
// plans (EXPLAIN on both targets, --plans), the fixes tried (fix rounds,
// --fixes, --try), --batch-inserts' rounds, and the findings that need
// the candidate's catalog, unless -catalog names a server to read it
// from.
//
// Usage: samerehearse [-fail-on RULES] [-min-effect-ms MS] [-min-calls N] [-judge-level LEVEL] [-catalog DSN] DIR
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/pgrehearse/pgrehearse/internal/fixes"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/rehearse"
	"github.com/pgrehearse/pgrehearse/internal/report"
)

func main() {
	failOn := flag.String("fail-on", "", "rehearse --fail-on")
	minEffectMS := flag.Float64("min-effect-ms", judge.DefaultComparisonMinEffectMS, "rehearse --min-effect-ms")
	minCalls := flag.Int64("min-calls", 10, "rehearse --min-calls")
	judgeLevel := flag.String("judge-level", "", "rehearse --judge-level")
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
	rules, err := judge.ParsePairRules(ruleText)
	if err != nil {
		fail(err)
	}
	level, err := judge.ParseMeanLevel(*judgeLevel)
	if *judgeLevel != "" && err != nil {
		fail(err)
	}
	minMS := *minEffectMS
	if minMS == 0 {
		minMS = -1 // none, as asked
	}
	// rehearse's own judging (rehearse.Judge), without the targets: no
	// plans, so no fixes, and the catalog only when -catalog names one.
	opts := rehearse.JudgeOptions{MinCalls: *minCalls, MinEffectMS: minMS, Rules: rules, ExpectWork: true, JudgeLevel: level,
		Plans: &rehearse.PlansOptions{}, Findings: true, FindingsDSN: *catalog, Fixes: true, FixRounds: fixes.DefaultRounds}
	j, err := rehearse.Judge(context.Background(), rehearse.Config{}, out, opts)
	if err != nil {
		fail(err)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(report.RehearsalDocument(j)); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "samerehearse:", err)
	os.Exit(1)
}
