package sweep

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
)

// chartWidth is the width of the longest bar of the TPS chart.
const chartWidth = 40

// WriteText renders the result for a terminal: a table per configuration
// with its peak and cliff, a bar chart of TPS against clients for every
// configuration, and with several configurations their TPS ratios.
func WriteText(w io.Writer, res *Result) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }

	wl := res.Workload
	what := "-b " + wl.Builtin
	if wl.Script != "" {
		what = "-f " + wl.Script
	}
	p("sweep: pgbench %s -M %s", what, wl.Mode)
	if wl.Scale > 0 {
		p(", scale %d", wl.Scale)
	}
	p("; %gs warm-up + %gs per step; on %s; %d client CPUs\n", res.Plan.WarmupS, res.Plan.DurationS, res.Target, res.ClientCPUs)
	if res.Partial {
		p("PARTIAL: the sweep stopped early; the steps below are complete, later ones are missing\n")
	}

	for _, c := range res.Configs {
		p("\nconfiguration %s: %s\n", c.Name, settingsOr(c.Settings))
		p("  %7s %11s %9s %9s %10s  %s\n", "clients", "TPS", "p50 ms", "p95 ms", "CPU/tx ms", "top wait event")
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
			p("  %7d %11.1f %9.3f %9.3f %10s  %s\n", s.Clients, s.TPS, s.Latency.P50, s.Latency.P95, cpu, wait)
		}
		p("%s", peakCliffLines(c))
	}

	writeChart(bw, res)

	if len(res.Comparison) > 0 {
		base := res.Comparison[0].Baseline
		p("\nTPS relative to %s\n  %7s", base, "clients")
		for _, c := range res.Configs {
			p(" %11s", c.Name+" TPS")
		}
		for _, c := range res.Configs[1:] {
			p(" %9s", c.Name+"/"+base)
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
				if v, ok := cmp.Ratio[c.Name]; ok {
					p(" %9.3f", v)
				} else {
					p(" %9s", "-")
				}
			}
			p("\n")
		}
	}
	return bw.Flush()
}

func settingsOr(m map[string]string) string {
	if len(m) == 0 {
		return "the server's settings"
	}
	return settingsString(m)
}

// peakCliffLines are the two summary lines of a configuration.
func peakCliffLines(c ConfigRun) string {
	if c.Peak == nil {
		return "  no steps\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  peak:  %d clients, %.1f TPS\n", c.Peak.Clients, c.Peak.TPS)
	switch cl := c.Cliff; {
	case cl == nil:
	case cl.Found:
		fmt.Fprintf(&b, "  cliff: %d clients, %.1f TPS = %.2f of the peak (threshold %.2f)\n", cl.Clients, cl.TPS, cl.RatioToPeak, cl.Ratio)
	default:
		fmt.Fprintf(&b, "  cliff: no cliff up to %d clients (no step after the peak below %.2f of it)\n", cl.UpTo, cl.Ratio)
	}
	return b.String()
}

// writeChart draws TPS against clients as horizontal bars, one row per
// configuration per client count, all on the same scale.
func writeChart(w io.Writer, res *Result) {
	var top float64
	for _, c := range res.Configs {
		for _, s := range c.Steps {
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
		for _, s := range c.Steps {
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
