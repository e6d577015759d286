// Command samejson judges stored replay results as a headroom search
// does (judge.Levels: the rounds at k = 1 are a side's baseline, every
// other level's rounds are judged against it under an SLO) and writes the
// verdicts as JSON: headroom's judgement, from stored inputs, so that two
// versions of pgrehearse can be compared byte for byte without running a
// search, whose timings differ from run to run. bench/samejson.sh builds
// it in both trees.
//
// Usage: samejson [-slo SLO] [-cores N] K=FILE[,FILE...] ...
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

func main() {
	sloText := flag.String("slo", "p95<+50%,errors<+0.1pp", "the SLO, as headroom --slo")
	cores := flag.Int("cores", 2, "the replayer's CPUs")
	flag.Parse()
	slo, err := judge.ParseSLO(*sloText)
	if err != nil {
		fail(err)
	}
	var levels []judge.Level
	for _, arg := range flag.Args() {
		k, files, ok := strings.Cut(arg, "=")
		if !ok {
			fail(fmt.Errorf("%q: want K=FILE[,FILE...]", arg))
		}
		f, err := strconv.ParseFloat(k, 64)
		if err != nil {
			fail(err)
		}
		var rounds []*results.Result
		for _, name := range strings.Split(files, ",") {
			res, err := results.ReadFile(name)
			if err != nil {
				fail(err)
			}
			rounds = append(rounds, res)
		}
		levels = append(levels, judge.LevelOf(f, rounds...))
	}
	v, err := judge.Levels(levels, slo, *cores)
	if err != nil {
		fail(err)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "samejson:", err)
	os.Exit(1)
}
