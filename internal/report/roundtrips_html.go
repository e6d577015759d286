package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
)

// roundTripsSection shows each replay's client round trips beside its
// server-side time; false when no run kept them. It stays apart from the
// comparison and colours nothing bad: the overhead is the setup's (network,
// client), not a regression.
func roundTripsSection(rep *compare.Report, h Hints) (htmlreport.Section, bool) {
	if len(rep.ClientRoundTrips) == 0 {
		return htmlreport.Section{}, false
	}
	s := htmlreport.Section{ID: "round-trips", Title: "Client round trips on the replay", Text: []string{
		"What the application waits for beyond the server's own time: the replay's client round trips, measured by the replayer, " +
			"beside the server-side time of the same statements in the same run, from the target's log" + paren(h.TargetLog) + ". " +
			"Overhead = client mean − server mean: network, client and connection time.",
		"Client-side context for the setup: never compared between runs, never part of the verdict, never a regression.",
	}}
	for _, rt := range rep.ClientRoundTrips {
		// "the candidate replay", or "the replay" of a one-run summary.
		run, label := "replay", "Replay"
		if rep.Candidate != nil {
			run = rt.Run + " replay"
			label = map[string]string{"baseline": "Baseline", "candidate": "Candidate"}[rt.Run]
		}
		s.Cards = append(s.Cards, htmlreport.Card{Label: label + ": client overhead per call", Value: fmtSignedMS(rt.OverheadMS) + " ms",
			Sub: fmt.Sprintf("round trip %s ms vs server %s ms, %d queries", fmtMS(rt.ClientMeanMS), fmtMS(rt.ServerMeanMS), rt.Fingerprints)})
		t := htmlreport.Table{ID: "round-trips-" + rt.Run, Sortable: true, Empty: "No query timed on both sides.",
			Title: fmt.Sprintf("%s (%s): top %d of %d queries by server time", strings.ToUpper(run[:1])+run[1:], rt.File, len(rt.Queries), rt.Fingerprints),
			Columns: []htmlreport.Column{{Label: "calls", Numeric: true, Tooltip: "calls in the target's log"},
				{Label: "server mean ms", Numeric: true}, {Label: "server p95 ms", Numeric: true},
				{Label: "client mean ms", Numeric: true, Tooltip: "round trip measured by the replayer"}, {Label: "client p95 ms", Numeric: true},
				{Label: "overhead ms", Numeric: true, Tooltip: "client mean − server mean"}, {Label: "query", Tooltip: "hover for the fingerprint"}}}
		for _, q := range rt.Queries {
			t.Rows = append(t.Rows, htmlreport.Row{Detail: roundTripDetail(run, q), Cells: []htmlreport.Cell{
				htmlreport.Num(strconv.FormatInt(q.Calls, 10), float64(q.Calls)),
				htmlreport.Num(fmtMS(q.ServerMeanMS), q.ServerMeanMS), htmlreport.Num(fmtMS(q.ServerP95MS), q.ServerP95MS),
				htmlreport.Num(fmtMS(q.ClientMeanMS), q.ClientMeanMS), htmlreport.Num(fmtMS(q.ClientP95MS), q.ClientP95MS),
				htmlreport.Num(fmtSignedMS(q.OverheadMS), q.OverheadMS), queryCell(q.Fingerprint, q.Query, pageQueryWidth),
			}})
		}
		s.Tables = append(s.Tables, t)
	}
	return s, true
}

func roundTripDetail(run string, q compare.RoundTrip) *htmlreport.Detail {
	ms := func(v float64) string { return fmtMS(v) + " ms" }
	return &htmlreport.Detail{Title: "Query " + q.Fingerprint + ": client round trips on the " + run, Code: DisplayQuery(q.Query),
		Table: &htmlreport.SimpleTable{Head: []string{"", "server (target's log)", "client round trip", "overhead"}, Rows: [][]string{
			{"calls", strconv.FormatInt(q.Calls, 10), strconv.FormatInt(q.ClientCalls, 10), ""},
			{"mean", ms(q.ServerMeanMS), ms(q.ClientMeanMS), fmtSignedMS(q.OverheadMS) + " ms"},
			{"p95", ms(q.ServerP95MS), ms(q.ClientP95MS), fmtSignedMS(q.ClientP95MS-q.ServerP95MS) + " ms"},
		}},
		Notes: []string{"Client-side: time outside the server (network, client). Not compared between runs, not a regression."}}
}
