// Command aafloors reads the results of A/A replays (bench/aa.sh: one
// captured workload replayed several times onto each of two identical
// targets, A1.json... and B1.json... in a directory) and prints what
// identical targets differ by: per figure, the ratios between single runs
// of the same query, and what the comparison makes of them, one run a
// side (every pair of runs) and three a side (every split of the runs into
// disjoint triples). docs/noise-measured.md derives the default noise floors from
// its output.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

func main() {
	minCalls := flag.Int64("min-calls", 10, "fewest timed calls for a query to count")
	flag.Float64Var(&opts.Noise.Mean, "mean", 0, "noise floor of the mean for one run a side (0: the default)")
	flag.Float64Var(&opts.Noise.P50, "p50", 0, "noise floor of the p50 (0: the default)")
	flag.Float64Var(&opts.Noise.P95, "p95", 0, "noise floor of the p95 (0: the default)")
	flag.Float64Var(&opts.Noise.P99, "p99", 0, "noise floor of the p99 (0: the default)")
	flag.Float64Var(&opts.MinEffectMS, "ms", 0, "ms floor (0: the default)")
	skip := flag.Int("skip-first", 0, "leave out each target's first N runs (a warm-up)")
	flag.Parse()
	skipFirst = *skip
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: aafloors DIR...  (directories of A*.json and B*.json A/A replays)")
		os.Exit(2)
	}
	var sets [][]*results.Result
	for _, dir := range flag.Args() {
		files, _ := filepath.Glob(filepath.Join(dir, "[AB]*.json"))
		sort.Strings(files)
		var set []*results.Result
		for _, f := range files {
			if n := strings.TrimSuffix(strings.TrimLeft(filepath.Base(f), "AB"), ".json"); n <= fmt.Sprint(skipFirst) && len(n) == 1 {
				continue
			}
			r, err := results.ReadFile(f)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			set = append(set, r)
		}
		if len(set) < 2 {
			fmt.Fprintf(os.Stderr, "%s: fewer than two results\n", dir)
			os.Exit(1)
		}
		sets = append(sets, set)
	}
	ratios(sets, *minCalls)
	fmt.Println()
	onePerSide(sets)
	fmt.Println()
	threePerSide(sets)
	fmt.Println()
	rehearsals(sets)
}

// ratios prints, per figure, the quantiles of max(x/y, y/x) between two
// runs of the same query, among pairs whose difference reaches each ms
// floor.
func ratios(sets [][]*results.Result, minCalls int64) {
	figs := []struct {
		name string
		get  func(q *results.Result, fp string) float64
	}{
		{"mean", func(r *results.Result, fp string) float64 { return r.Query(fp).MeanMS }},
		{"p50", func(r *results.Result, fp string) float64 { return r.Query(fp).P50MS }},
		{"p95", func(r *results.Result, fp string) float64 { return r.Query(fp).P95MS }},
		{"p99", func(r *results.Result, fp string) float64 { return r.Query(fp).P99MS }},
	}
	fmt.Println("Single run against single run of the same target or its twin: max(x/y, y/x) per query")
	fmt.Println("ms floor  figure  pairs  p50    p90    p95    p99    max")
	for _, floor := range []float64{0, 0.05, 0.1, 0.2} {
		for _, f := range figs {
			var rs []float64
			for _, set := range sets {
				for i, a := range set {
					for _, b := range set[i+1:] {
						for _, qa := range a.Queries {
							qb := b.Query(qa.Fingerprint)
							if qb == nil || qa.TimedCalls < minCalls || qb.TimedCalls < minCalls {
								continue
							}
							x, y := math.Max(f.get(a, qa.Fingerprint), 0.001), math.Max(f.get(b, qa.Fingerprint), 0.001)
							if math.Abs(x-y) < floor {
								continue
							}
							rs = append(rs, math.Max(x/y, y/x))
						}
					}
				}
			}
			slices.Sort(rs)
			q := func(p float64) float64 {
				if len(rs) == 0 {
					return math.NaN()
				}
				return rs[min(len(rs)-1, int(math.Ceil(p*float64(len(rs))))-1)]
			}
			fmt.Printf("%-8g  %-6s  %5d  %.3f  %.3f  %.3f  %.3f  %.3f\n", floor, f.name, len(rs), q(0.5), q(0.9), q(0.95), q(0.99), q(1))
		}
	}
}

// tally counts what comparisons called the queries.
type tally struct {
	reports, fails, queries, regressed, tail, improved, small int
	worst                                                     []string
}

func (t *tally) add(rep *compare.Report) {
	t.reports++
	if rep.Verdict.Status == compare.VerdictFail {
		t.fails++
	}
	for _, q := range rep.Queries {
		if q.Effects == nil {
			continue
		}
		t.queries++
		switch q.Status {
		case compare.StatusRegressed:
			t.regressed++
			t.worst = append(t.worst, fmt.Sprintf("%s %.2fx mean (%.2f-%.2f) %+.3f ms: %.50s", rep.Candidate.Name, q.Effects.Mean.Ratio, q.Effects.Mean.Low, q.Effects.Mean.High, q.Effects.Mean.DeltaMS, q.Query))
		case compare.StatusTailRegressed:
			t.tail++
			t.worst = append(t.worst, fmt.Sprintf("%s %.2fx p95 (%.2f-%.2f) %+.3f ms: %.50s", rep.Candidate.Name, q.Effects.P95.Ratio, q.Effects.P95.Low, q.Effects.P95.High, q.Effects.P95.DeltaMS, q.Query))
		case compare.StatusImproved:
			t.improved++
		case compare.StatusSmallChange:
			t.small++
		}
	}
}

func (t *tally) print(title string) {
	fmt.Printf("%s: %d reports, %d FAIL (p95>+20%%), of %d judged queries %d regressed, %d tail regressed, %d improved, %d small changes\n",
		title, t.reports, t.fails, t.queries, t.regressed, t.tail, t.improved, t.small)
	for _, w := range t.worst {
		fmt.Println("  " + w)
	}
}

var (
	rules, _  = judge.ParsePairRules([]string{"p95>+20%"})
	opts      compare.Options
	skipFirst int
)

func options() compare.Options {
	o := opts
	o.Rules = rules
	return o
}

// onePerSide compares every ordered pair of runs of a set, one a side,
// with the default floors.
func onePerSide(sets [][]*results.Result) {
	var t tally
	for _, set := range sets {
		for _, a := range set {
			for _, b := range set {
				if a == b {
					continue
				}
				rep, err := compare.Compare(a, b, options())
				if err != nil {
					fmt.Fprintf(os.Stderr, "%s vs %s: %v\n", a.Name(), b.Name(), err)
					continue
				}
				t.add(rep)
			}
		}
	}
	t.print("One run a side, every ordered pair, floors " + floors())
}

func floors() string {
	d := compare.DefaultNoiseFloors
	pick := func(v, def float64) float64 {
		if v > 0 {
			return v
		}
		return def
	}
	return fmt.Sprintf("(mean %.2f, p50 %.2f, p95 %.2f, p99 %.2f, %g ms)", pick(opts.Noise.Mean, d.Mean), pick(opts.Noise.P50, d.P50),
		pick(opts.Noise.P95, d.P95), pick(opts.Noise.P99, d.P99), pick(opts.MinEffectMS, compare.DefaultMinEffectMS))
}

// threePerSide compares disjoint triples of a set's runs: the A runs'
// against the B runs' (A against its twin), and within one target.
func threePerSide(sets [][]*results.Result) {
	var t tally
	for _, set := range sets {
		var as, bs []*results.Result
		for _, r := range set {
			if strings.HasPrefix(filepath.Base(r.Name()), "A") {
				as = append(as, r)
			} else {
				bs = append(bs, r)
			}
		}
		for _, x := range triples(as) {
			for _, y := range triples(bs) {
				for _, pair := range [][2][]*results.Result{{x, y}, {y, x}} {
					rep, err := compare.Runs(pair[0], pair[1], options())
					if err != nil {
						fmt.Fprintln(os.Stderr, err)
						continue
					}
					t.add(rep)
				}
			}
		}
	}
	t.print("Three runs a side, every triple of A against every triple of B and back")
}

// rehearsals compares the runs as rehearsals of three rounds a side
// would have made them: every stretch of six consecutive replays (in the
// order they ran, A B B A A B ...) that holds three of each target.
func rehearsals(sets [][]*results.Result) {
	var t tally
	for _, set := range sets {
		order := slices.Clone(set)
		slices.SortStableFunc(order, func(a, b *results.Result) int {
			ta, tb := a.StartedAt.Micros(), b.StartedAt.Micros()
			return int(ta/1000 - tb/1000)
		})
		for i := 0; i+6 <= len(order); i++ {
			var as, bs []*results.Result
			for _, r := range order[i : i+6] {
				if strings.HasPrefix(filepath.Base(r.Name()), "A") {
					as = append(as, r)
				} else {
					bs = append(bs, r)
				}
			}
			if len(as) != 3 {
				continue
			}
			for _, pair := range [][2][]*results.Result{{as, bs}, {bs, as}} {
				rep, err := compare.Runs(pair[0], pair[1], options())
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					continue
				}
				t.add(rep)
			}
		}
	}
	t.print("Rehearsals: six consecutive rounds holding three of each target, A against B and back")
}

// triples are the 3-subsets of rs.
func triples(rs []*results.Result) [][]*results.Result {
	var out [][]*results.Result
	for i := range rs {
		for j := i + 1; j < len(rs); j++ {
			for k := j + 1; k < len(rs); k++ {
				out = append(out, []*results.Result{rs[i], rs[j], rs[k]})
			}
		}
	}
	return out
}
