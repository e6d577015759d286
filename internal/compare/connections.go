package compare

// RowKind says what a comparison's row (a QueryDiff) measures: a query,
// or the connections' setup of replays (Report.ConnectionSetup).
type RowKind string

// Kinds of rows.
const (
	// RowQuery: a query fingerprint's calls (the kind of every row of
	// Report.Queries; omitted from the JSON).
	RowQuery RowKind = ""
	// RowConnectionSetup: the replays' connections to the target,
	// each from its connect call's start to a session ready for its
	// first statement (results.Connections), as a query's calls: what
	// an application that connects per request pays on each request.
	RowConnectionSetup RowKind = "connection_setup"
)

// MinConnections is the fewest connections every run of both sides must
// have made for a comparison to show their setup (Report.ConnectionSetup):
// the fewest timed calls a query needs to be judged at the default
// (Options.MinCalls), so that a workload whose few sessions keep their
// connections shows no row of a handful of setups.
const MinConnections = 10

// connectionRows are each run's connections as a query's row; false
// when a run has none recorded (an analysis, a dry run, a result from
// before) or fewer than MinConnections, or a histogram that cannot be
// read.
func connectionRows(runs []*Run) ([]*Query, bool) {
	out := make([]*Query, len(runs))
	for i, r := range runs {
		if r.Replay == nil || r.Connections == nil || r.Connections.Count < MinConnections {
			return nil, false
		}
		row, err := r.Connections.Row()
		if err != nil {
			return nil, false
		}
		out[i] = &row
	}
	return out, true
}

// connectionSetup is the comparison of the runs' connection setup when
// every run of both sides connected MinConnections times at least: a
// row beside the queries, its figures and effects (the interval over
// the runs) and its status by the rules of a query's round trips (its
// floors, its noise, its calls' evidence), at the application's level
// where it was measured. It is context, not part of the verdict: no
// rule is checked on it and it counts among no regressions, so that a
// comparison's verdict is what it was before connections were timed.
// nil otherwise.
func (c *comparer) connectionSetup(base, cand []*Run) *QueryDiff {
	b, okB := connectionRows(base)
	k, okK := connectionRows(cand)
	if !okB || !okK {
		return nil
	}
	// No query's server-side or windowed figures are the connections':
	// a comparer without them.
	cc := *c
	cc.bWork, cc.cWork, cc.bApp, cc.cApp, cc.appWindowed = workRows{}, workRows{}, nil, nil, map[string]bool{}
	d := cc.diff(b, k)
	d.Kind = RowConnectionSetup
	if lv := d.Levels; lv != nil {
		// Measured by the replayer, whatever the queries' source.
		if lv.Application == nil {
			lv.Application = lv.Log
		}
		lv.Log, lv.Server = nil, nil
		if lv.Application != nil {
			lv.Application.Level = LevelApplication
		}
		lv.Judged, lv.Percentiles = LevelApplication, LevelApplication
	}
	return &d
}
