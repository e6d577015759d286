package compare

import (
	"cmp"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/querystats"
)

// RoundTripsTop is how many queries a run's RoundTrips lists: enough for
// the costly ones, few enough that the report stays readable.
const RoundTripsTop = 20

// RoundTrips sets a replay's client round trips beside the server-side
// time of the same statements in the same run, so that a DBA sees what the
// application waits for beyond the server's work: network, the client,
// the connection (a new host farther from the application shows here). It
// exists only for a replay whose queries are server-side and which kept its
// client round trips (replay --target-log). It is never compared across
// runs nor judged: the overhead belongs to the setup, not to a regression,
// and the comparison itself uses server-side time only.
type RoundTrips struct {
	// Run is "baseline" or "candidate"; File the result it came from.
	Run  string `json:"run"`
	File string `json:"file"`
	// Fingerprints counts the queries timed on both sides; Queries holds
	// the RoundTripsTop of them costing the most server-side time.
	Fingerprints int `json:"fingerprints"`
	// The means are over every timed call of those fingerprints;
	// OverheadMS is ClientMeanMS - ServerMeanMS.
	ServerMeanMS float64     `json:"server_mean_ms"`
	ClientMeanMS float64     `json:"client_mean_ms"`
	OverheadMS   float64     `json:"overhead_ms"`
	Queries      []RoundTrip `json:"queries"`
}

// RoundTrip is one fingerprint's server-side figures (from queries) and
// client round trips (from client_queries) in one replay.
type RoundTrip struct {
	Fingerprint string `json:"fingerprint"`
	Query       string `json:"query"`
	// Calls are the server's; ClientCalls the replayer's, which differ
	// when the target's log missed statements.
	Calls         int64   `json:"calls"`
	ClientCalls   int64   `json:"client_calls"`
	ServerTotalMS float64 `json:"server_total_ms"`
	ServerMeanMS  float64 `json:"server_mean_ms"`
	ServerP95MS   float64 `json:"server_p95_ms"`
	ClientMeanMS  float64 `json:"client_mean_ms"`
	ClientP95MS   float64 `json:"client_p95_ms"`
	// OverheadMS is ClientMeanMS - ServerMeanMS: time per call spent
	// outside the server. It may be slightly negative when the two
	// clocks round differently.
	OverheadMS float64 `json:"overhead_ms"`
}

// roundTrips pairs r's server-side queries with its client round trips;
// false when r has no client round trips to set beside server time.
func roundTrips(r *Run, role string) (RoundTrips, bool) {
	// A run whose queries are themselves client round trips has nothing
	// server-side to set them beside.
	if r.LatencySource == LatencyClient || r.Replay == nil || len(r.ClientQueries) == 0 {
		return RoundTrips{}, false
	}
	client := map[string]*querystats.Row{}
	for i := range r.ClientQueries {
		c := &r.ClientQueries[i]
		if _, dup := client[c.Fingerprint]; !dup {
			client[c.Fingerprint] = c
		}
	}
	rt := RoundTrips{Run: role, File: r.Name(), Queries: []RoundTrip{}}
	var serverMS, clientMS float64
	var serverN, clientN int64
	seen := map[string]bool{}
	for _, s := range r.Queries {
		c := client[s.Fingerprint]
		if c == nil || seen[s.Fingerprint] || s.TimedCalls == 0 || c.TimedCalls == 0 {
			continue
		}
		seen[s.Fingerprint] = true
		rt.Queries = append(rt.Queries, RoundTrip{
			Fingerprint: s.Fingerprint, Query: s.Query, Calls: s.Calls, ClientCalls: c.Calls,
			ServerTotalMS: s.TotalMS, ServerMeanMS: s.MeanMS, ServerP95MS: s.P95MS,
			ClientMeanMS: c.MeanMS, ClientP95MS: c.P95MS, OverheadMS: c.MeanMS - s.MeanMS,
		})
		serverMS, serverN = serverMS+s.TotalMS, serverN+s.TimedCalls
		clientMS, clientN = clientMS+c.TotalMS, clientN+c.TimedCalls
	}
	if len(rt.Queries) == 0 {
		return RoundTrips{}, false
	}
	rt.Fingerprints = len(rt.Queries)
	rt.ServerMeanMS, rt.ClientMeanMS = serverMS/float64(serverN), clientMS/float64(clientN)
	rt.OverheadMS = rt.ClientMeanMS - rt.ServerMeanMS
	slices.SortStableFunc(rt.Queries, func(a, b RoundTrip) int {
		return cmp.Or(cmp.Compare(b.ServerTotalMS, a.ServerTotalMS), cmp.Compare(a.Fingerprint, b.Fingerprint))
	})
	rt.Queries = slices.Clip(rt.Queries[:min(len(rt.Queries), RoundTripsTop)])
	return rt, true
}

// addRoundTrips fills Report.ClientRoundTrips from the runs that have
// client round trips, in the order baseline, candidate.
func (rep *Report) addRoundTrips(runs ...*Run) {
	roles := []string{"baseline", "candidate"}
	for i, r := range runs {
		if rt, ok := roundTrips(r, roles[i]); ok {
			rep.ClientRoundTrips = append(rep.ClientRoundTrips, rt)
		}
	}
}
