package report

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/stats"
	"github.com/pgrehearse/pgrehearse/internal/stepcurve"
	"github.com/pgrehearse/pgrehearse/internal/sweep"
)

// chartWidth is the width of the longest bar of the TPS chart.
const chartWidth = 40

// WriteSweep renders a sweep for a terminal: a table per configuration
// with its peak and cliff, a bar chart of TPS against clients for every
// configuration, and with several configurations their TPS ratios.
func WriteSweep(w io.Writer, res *sweep.Result) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }

	p("sweep: %s", workloadLine(res.Workload))
	p("; %gs warm-up + %gs per step; on %s; %d client CPUs\n", res.Plan.WarmupS, res.Plan.DurationS, res.Target, res.ClientCPUs)
	isLog := res.Workload.Kind == "log"
	if isLog {
		p("  TPS: transactions/s (COMMIT, ROLLBACK and statements outside a transaction block); latency per statement\n")
	}
	if res.Partial {
		p("PARTIAL: the sweep stopped early; the steps below are complete, later ones are missing\n")
	}
	if w := sharedDriverWarning(res); w != "" {
		p("%s\n", w)
	}

	for _, c := range res.Configs {
		p("\nconfiguration %s: %s\n", c.Name, settingsOr(c.Settings))
		if isLog {
			p("  %7s %11s %11s %8s %9s %9s %10s  %s\n", "clients", "TPS", "stmt/s", "sessions", "p50 ms", "p95 ms", "CPU/tx ms", "top wait event")
		} else {
			p("  %7s %11s %9s %9s %10s  %s\n", "clients", "TPS", "p50 ms", "p95 ms", "CPU/tx ms", "top wait event")
		}
		for _, s := range c.Steps {
			cpu := "unknown"
			if s.CPUPerTxMS != nil {
				cpu = fmt.Sprintf("%.4f", *s.CPUPerTxMS)
			}
			wait := "-"
			if len(s.WaitEvents) > 0 {
				e := s.WaitEvents[0]
				wait = fmt.Sprintf("%s:%s %.0f%%", e.Type, e.Event, 100*e.Share)
			}
			if isLog {
				p("  %7s %11.1f %11.1f %8s %9.3f %9.3f %10s  %s\n", clientsText(s), s.TPS, s.StatementsPerS, sessionsText(s.Sessions), s.Latency.P50, s.Latency.P95, cpu, wait)
				if s.Failed > 0 {
					p("  %7s %d statements failed: %s\n", "", s.Failed, errorsText(s.Sessions))
				}
				continue
			}
			p("  %7s %11.1f %9.3f %9.3f %10s  %s\n", clientsText(s), s.TPS, s.Latency.P50, s.Latency.P95, cpu, wait)
		}
		p("%s", peakCliffLines(c))
		if res.NoiseUnmeasured && c.Peak != nil {
			p("  knee, cliff: not judged: %s\n", unmeasuredWhy)
		}
	}

	writeChart(bw, res)

	if len(res.Comparison) > 0 {
		base := res.Comparison[0].Baseline
		p("\nTPS relative to %s (medians; %s)\n  %7s", base, sameLegend(res), "clients")
		for _, c := range res.Configs {
			p(" %11s", c.Name+" TPS")
		}
		for _, c := range res.Configs[1:] {
			p(" %18s", c.Name+"/"+base)
		}
		p("\n")
		for _, cmp := range res.Comparison {
			p("  %7d", cmp.Clients)
			for _, c := range res.Configs {
				if v, ok := cmp.TPS[c.Name]; ok {
					p(" %11.1f", v)
				} else {
					p(" %11s", "-")
				}
			}
			for _, c := range res.Configs[1:] {
				p(" %18s", ratioText(cmp, c.Name))
			}
			p("\n")
		}
	}
	return bw.Flush()
}

// ratioText is a configuration's TPS over the baseline's at one client
// count: "~" when it cannot be told from noise, as benchstat prints it,
// else the ratio with its interval.
func ratioText(cmp sweep.Comparison, name string) string {
	v, ok := cmp.Ratio[name]
	if !ok {
		return "-"
	}
	d, ok := cmp.Change[name]
	if !ok {
		return fmt.Sprintf("%.3f", v)
	}
	if d.Same {
		return "~"
	}
	return fmt.Sprintf("%.3f (%.2f-%.2f)", v, d.Low, d.High)
}

// unmeasuredWhy says why a comparison of one step per client count
// judges nothing against noise.
const unmeasuredWhy = "one step per client count measures no noise between steps (--repeat 3 measures it, the default with --compare)"

// sameLegend says what "~" means for the sweep's repeats.
func sameLegend(res *sweep.Result) string {
	if res.NoiseUnmeasured {
		return "no interval, no ~: " + unmeasuredWhy
	}
	if res.Plan.Repeat > 1 {
		return fmt.Sprintf("%d steps each; ~: not told from noise, the ratio's interval holds 1 or it is within the noise of the steps or 10%%", res.Plan.Repeat)
	}
	return fmt.Sprintf("one step each; ~: not told from noise, within %.0f%%, the noise assumed of one step (--repeat 3 measures it)", 100*(stepcurve.DefaultNoise-1))
}

// workloadLine describes the workload in one line.
func workloadLine(wl sweep.WorkloadInfo) string {
	if wl.Kind == "log" {
		line := fmt.Sprintf("log %s replayed at speed 0 (%d sessions, at most %d at once, %d statements in %.1f s of log time)",
			filepath.Base(wl.Log), wl.LogSessions, wl.LogConcurrency, wl.LogStatements, wl.LogSpanS)
		if wl.Scale > 0 {
			line += fmt.Sprintf(", pgbench -i scale %d", wl.Scale)
		}
		if wl.Setup != "" {
			line += ", setup " + filepath.Base(wl.Setup)
		}
		return line
	}
	what := "-b " + wl.Builtin
	if wl.Script != "" {
		what = "-f " + wl.Script
	}
	line := fmt.Sprintf("pgbench %s -M %s", what, wl.Mode)
	if wl.Scale > 0 {
		line += fmt.Sprintf(", scale %d", wl.Scale)
	}
	return line
}

// sessionsText is a log step's sessions: mean open, and the plan.
func sessionsText(sl *sweep.SessionLoad) string {
	if sl == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", sl.MeanOpen)
}

func errorsText(sl *sweep.SessionLoad) string {
	if sl == nil || len(sl.ErrorsBySQLState) == 0 {
		return "-"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(sl.ErrorsBySQLState)) {
		parts = append(parts, fmt.Sprintf("SQLSTATE %s: %d", k, sl.ErrorsBySQLState[k]))
	}
	return strings.Join(parts, ", ")
}

func settingsOr(m map[string]string) string {
	if len(m) == 0 {
		return "the server's settings"
	}
	return sweep.SettingsString(m)
}

// clientsText is a step's client count, with its repeat when the sweep
// repeats steps ("4 #2").
func clientsText(s sweep.Step) string {
	if s.Round > 0 {
		return fmt.Sprintf("%d #%d", s.Clients, s.Round)
	}
	return fmt.Sprint(s.Clients)
}

// span is a range of client counts: "4" or "2-16".
func span(lo, hi int) string {
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d-%d", lo, hi)
}

// peakCliffLines are the summary lines of a configuration: the knee
// first (where more clients stop paying), then the highest TPS measured,
// with the client counts whose TPS cannot be told from it, then the
// cliff, each with its interval.
func peakCliffLines(c sweep.ConfigRun) string {
	if c.Peak == nil {
		return "  no steps\n"
	}
	var b strings.Builder
	switch k := c.Knee; {
	case k == nil:
	case k.Indistinct != "":
		fmt.Fprintf(&b, "  knee:  not told apart: this curve alone shows one at %d clients, %s's none, and no client count's TPS or TPS over latency tells the two curves apart beyond the noise\n",
			k.Clients, k.Indistinct)
	case k.Found:
		within := ""
		if k.Lo != k.Hi {
			within = fmt.Sprintf(" (%s clients within noise of it)", span(k.Lo, k.Hi))
		}
		fmt.Fprintf(&b, "  knee:  %d clients%s, %.1f TPS at %.3f ms mean: from %d to %d clients TPS grew %.2fx while latency grew %.2fx\n",
			k.Clients, within, k.TPS, k.MeanMS, k.Clients, k.NextClients, k.TPSGrowth, k.LatencyGrowth)
	default:
		fmt.Fprintf(&b, "  knee:  none up to %d clients: no step bought less throughput than it cost in latency beyond the noise", k.UpTo)
		if k.Lo > 1 && k.Lo < k.UpTo {
			fmt.Fprintf(&b, "; a knee, if any, is at %d clients or more", k.Lo)
		}
		b.WriteString("\n")
	}
	pk := c.Peak
	switch k := c.Knee; {
	case k != nil && k.Found && pk.Clients != k.Clients && k.Clients >= pk.Lo && k.Clients <= pk.Hi:
		fmt.Fprintf(&b, "  peak:  %d clients, %.1f TPS, not told from the knee's (%s clients within noise of it): no real gain past the knee\n",
			pk.Clients, pk.TPS, span(pk.Lo, pk.Hi))
	case pk.Lo != pk.Hi:
		fmt.Fprintf(&b, "  peak:  %d clients, %.1f TPS (%s clients within noise of it)\n", pk.Clients, pk.TPS, span(pk.Lo, pk.Hi))
	default:
		fmt.Fprintf(&b, "  peak:  %d clients, %.1f TPS\n", pk.Clients, pk.TPS)
	}
	switch cl := c.Cliff; {
	case cl == nil:
	case cl.Indistinct != "":
		fmt.Fprintf(&b, "  cliff: not told apart: this curve alone falls below %.2f of its peak at %d clients, %s's does not, and no client count's TPS or TPS over latency tells the two curves apart beyond the noise\n",
			cl.Ratio, cl.Clients, cl.Indistinct)
	case cl.Found:
		fmt.Fprintf(&b, "  cliff: %d clients, %.1f TPS = %.2f of the peak (threshold %.2f); below it from %.3g clients (%.3g-%.3g)\n",
			cl.Clients, cl.TPS, cl.RatioToPeak, cl.Ratio, cl.Estimate, cl.Lo, cl.Hi)
	default:
		fmt.Fprintf(&b, "  cliff: no cliff up to %d clients (no step after the peak below %.2f of it beyond the noise)\n", cl.UpTo, cl.Ratio)
	}
	return b.String()
}

// sharedDriverWarning says that the load generator took the server's
// CPU, when it did.
func sharedDriverWarning(res *sweep.Result) string {
	if !res.DriverSharesServer {
		return ""
	}
	return fmt.Sprintf("WARNING: the load generator ran on the server's machine (%d CPUs shared): the CPU it used was taken from the server, so the knee and the cliff may be the generator's; run it from another machine to measure the server alone", res.ClientCPUs)
}

// medianSteps are a configuration's steps, one per client count, in the
// order first run, with the medians of the repeats' TPS and latencies.
func medianSteps(steps []sweep.Step) []sweep.Step {
	var out []sweep.Step
	idx := map[int]int{}
	var tps, p95 [][]float64
	for _, s := range steps {
		i, ok := idx[s.Clients]
		if !ok {
			i = len(out)
			idx[s.Clients] = i
			out = append(out, sweep.Step{Clients: s.Clients})
			tps, p95 = append(tps, nil), append(p95, nil)
		}
		tps[i] = append(tps[i], s.TPS)
		p95[i] = append(p95[i], s.Latency.P95)
	}
	for i := range out {
		out[i].TPS, out[i].Latency.P95 = stats.Median(tps[i]), stats.Median(p95[i])
	}
	return out
}

// writeChart draws TPS against clients as horizontal bars, one row per
// configuration per client count, all on the same scale.
func writeChart(w io.Writer, res *sweep.Result) {
	var top float64
	for _, c := range res.Configs {
		for _, s := range medianSteps(c.Steps) {
			top = max(top, s.TPS)
		}
	}
	if top <= 0 {
		return
	}
	fmt.Fprintf(w, "\nTPS vs clients (full bar = %.1f TPS)\n", top)
	byClients := map[int][]string{}
	var order []int
	nameWidth := 0
	for _, c := range res.Configs {
		nameWidth = max(nameWidth, len(c.Name))
	}
	for _, c := range res.Configs {
		for _, s := range medianSteps(c.Steps) {
			if _, ok := byClients[s.Clients]; !ok {
				order = append(order, s.Clients)
			}
			n := int(s.TPS/top*chartWidth + 0.5)
			bar := strings.Repeat("█", n) + strings.Repeat(" ", chartWidth-n)
			label := ""
			if len(res.Configs) > 1 {
				label = fmt.Sprintf("%-*s ", nameWidth, c.Name)
			}
			byClients[s.Clients] = append(byClients[s.Clients], fmt.Sprintf("%s│%s %.0f", label, bar, s.TPS))
		}
	}
	sort.Ints(order)
	for _, n := range order {
		for i, row := range byClients[n] {
			if i == 0 {
				fmt.Fprintf(w, "  %5d %s\n", n, row)
			} else {
				fmt.Fprintf(w, "  %5s %s\n", "", row)
			}
		}
	}
}
