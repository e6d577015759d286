package results

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/timeline"
)

// errNoHist explains why a version 1 file cannot be merged.
var errNoHist = errors.New("it has no latency histograms (a file of results version 1, written without histograms): " +
	"it can be compared but not merged; run the analysis or replay again to merge it")

// Merge returns the result of both runs' work together: a and b are parts
// of one workload (its sessions split between them), or results to pool.
// Counts add, histograms merge bucket for bucket and timelines align on
// wall time, so the merge of the parts of a log split by session equals
// the analysis of the whole log. a and b are left unchanged.
//
// Both must be of the same kind and latency source, and two replays of
// the same speed; evidence is not merged (it describes a server, not a
// share of the workload): the result keeps the first one found.
func Merge(a, b *Result) (*Result, error) {
	if a.Kind != b.Kind {
		return nil, fmt.Errorf("cannot merge %s (%s) with %s (%s): different kinds of results", a.Name(), a.Kind, b.Name(), b.Kind)
	}
	if a.LatencySource != b.LatencySource {
		return nil, fmt.Errorf("cannot merge %s with %s: latencies measured in different places (%s and %s)",
			a.Name(), b.Name(), a.LatencySource, b.LatencySource)
	}
	if (a.Replay == nil) != (b.Replay == nil) {
		return nil, fmt.Errorf("cannot merge %s with %s: only one is a replay", a.Name(), b.Name())
	}
	m := New(a.Kind, a.LatencySource)
	m.Source = a.Name() + "+" + b.Name()
	m.Partial = a.Partial || b.Partial
	if a.Incomplete != nil || b.Incomplete != nil {
		m.Incomplete = union(a.Incomplete, b.Incomplete)
	}
	if a.Degraded != nil || b.Degraded != nil {
		m.Degraded = union(a.Degraded, b.Degraded)
	}
	if a.Warnings != nil || b.Warnings != nil {
		m.Warnings = union(a.Warnings, b.Warnings)
	}
	m.Files = union(a.Files, b.Files)
	m.FirstTime, m.LastTime = minTime(a.FirstTime, b.FirstTime), max(a.LastTime, b.LastTime)

	if a.Lines != nil || b.Lines != nil {
		m.Lines = &LineCounts{Skipped: map[string]int64{}}
		for _, l := range []*LineCounts{a.Lines, b.Lines} {
			if l != nil {
				m.Lines.Add(*l)
			}
		}
	}
	m.Statements = addStatements(a.Statements, b.Statements)
	if a.Events != nil || b.Events != nil {
		m.Events = addCounts(addCounts(nil, a.Events), b.Events)
	}
	m.Sessions = addSessions(a.Sessions, b.Sessions)
	m.Filtered = Filtered{
		Events:     a.Filtered.Events + b.Filtered.Events,
		Statements: a.Filtered.Statements + b.Filtered.Statements,
		Sessions:   a.Filtered.Sessions + b.Filtered.Sessions,

		OwnStatements: a.Filtered.OwnStatements + b.Filtered.OwnStatements,
	}
	m.ErrorsBySQLState = addCounts(addCounts(nil, a.ErrorsBySQLState), b.ErrorsBySQLState)

	var err error
	if m.Queries, err = mergeRows(a, b, a.Queries, b.Queries); err != nil {
		return nil, err
	}
	if m.Timeline, err = mergeTimelines(a, b); err != nil {
		return nil, err
	}
	m.Evidence = a.Evidence
	if m.Evidence == nil {
		m.Evidence = b.Evidence
	}
	if a.Replay != nil {
		if m.Replay, err = mergeReplays(a, b); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// MergeAll merges every result in turn; it needs at least one.
func MergeAll(rs ...*Result) (*Result, error) {
	if len(rs) == 0 {
		return nil, errors.New("no results to merge")
	}
	m := rs[0]
	for _, r := range rs[1:] {
		var err error
		if m, err = Merge(m, r); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func addStatements(a, b StatementCounts) StatementCounts {
	return StatementCounts{
		Total:    a.Total + b.Total,
		Executed: a.Executed + b.Executed,
		Failed:   a.Failed + b.Failed,
		Skipped:  addCounts(addCounts(nil, a.Skipped), b.Skipped),
		Unparsed: a.Unparsed + b.Unparsed,
		Empty:    a.Empty + b.Empty,
	}
}

func addSessions(a, b SessionCounts) SessionCounts {
	s := SessionCounts{
		Total:                   a.Total + b.Total,
		Reconnects:              a.Reconnects + b.Reconnects,
		ConnectFailed:           a.ConnectFailed + b.ConnectFailed,
		ConnectRetries:          a.ConnectRetries + b.ConnectRetries,
		ConnectFailedAsOriginal: a.ConnectFailedAsOriginal + b.ConnectFailedAsOriginal,
	}
	byKey := map[ConnectFailure]int64{}
	for _, f := range slices.Concat(a.ConnectFailures, b.ConnectFailures) {
		n := f.Sessions
		f.Sessions = 0
		byKey[f] += n
	}
	s.ConnectFailures = SortConnectFailures(byKey)
	return s
}

// SortConnectFailures lists failures with their session counts, most
// sessions first, then by user and database; nil when there are none.
func SortConnectFailures(byKey map[ConnectFailure]int64) []ConnectFailure {
	if len(byKey) == 0 {
		return nil
	}
	out := make([]ConnectFailure, 0, len(byKey))
	for f, n := range byKey {
		f.Sessions = n
		out = append(out, f)
	}
	slices.SortFunc(out, func(x, y ConnectFailure) int {
		return cmp.Or(cmp.Compare(y.Sessions, x.Sessions), cmp.Compare(x.User, y.User),
			cmp.Compare(x.Database, y.Database), cmp.Compare(x.SQLState, y.SQLState), cmp.Compare(x.Message, y.Message))
	})
	return out
}

// mergeRows merges two lists of query rows through their histograms.
func mergeRows(a, b *Result, x, y []querystats.Row) ([]querystats.Row, error) {
	sa, err := querystats.FromRows(x)
	if err != nil {
		return nil, tooOld(a, err)
	}
	sb, err := querystats.FromRows(y)
	if err != nil {
		return nil, tooOld(b, err)
	}
	sa.Merge(sb)
	return sa.Rows(querystats.RowOptions{Hist: true})
}

func tooOld(r *Result, err error) error {
	if r.Version < Version {
		return fmt.Errorf("cannot merge %s: %w", r.Name(), errNoHist)
	}
	return fmt.Errorf("cannot merge %s: %w", r.Name(), err)
}

func mergeTimelines(a, b *Result) (*timeline.JSON, error) {
	if a.Timeline == nil && b.Timeline == nil {
		return nil, nil
	}
	ta, err := timeline.FromJSON(a.Timeline)
	if err != nil {
		return nil, timelineErr(a, err)
	}
	tb, err := timeline.FromJSON(b.Timeline)
	if err != nil {
		return nil, timelineErr(b, err)
	}
	ta.Merge(tb)
	return ta.JSON(), nil
}

func timelineErr(r *Result, err error) error {
	if errors.Is(err, timeline.ErrNoBins) {
		return fmt.Errorf("cannot merge %s: its timeline has no latency bins (a file of results version %d): "+
			"it can be compared but not merged; run the analysis or replay again to merge it", r.Name(), r.Version)
	}
	return fmt.Errorf("cannot merge the timeline of %s: %w", r.Name(), err)
}

func mergeReplays(a, b *Result) (*Replay, error) {
	x, y := a.Replay, b.Replay
	if x.Speed != y.Speed {
		return nil, fmt.Errorf("cannot merge %s with %s: replays at different speeds (%g and %g)", a.Name(), b.Name(), x.Speed, y.Speed)
	}
	if x.DryRun != y.DryRun {
		return nil, fmt.Errorf("cannot merge %s with %s: only one is a dry run", a.Name(), b.Name())
	}
	m := &Replay{
		DryRun:           x.DryRun,
		Speed:            x.Speed,
		StartedAt:        minTime(x.StartedAt, y.StartedAt),
		EndedAt:          max(x.EndedAt, y.EndedAt),
		ClientCPUSeconds: x.ClientCPUSeconds + y.ClientCPUSeconds,
		Lost:             x.Lost + y.Lost,
		ReplayerDelayed:  x.ReplayerDelayed + y.ReplayerDelayed,
		TargetLocal:      x.TargetLocal || y.TargetLocal,
		Outcomes: Outcomes{
			Ran:                  x.Outcomes.Ran + y.Outcomes.Ran,
			OriginalFailed:       x.Outcomes.OriginalFailed + y.Outcomes.OriginalFailed,
			BothFailed:           x.Outcomes.BothFailed + y.Outcomes.BothFailed,
			FailedOnlyOnTarget:   x.Outcomes.FailedOnlyOnTarget + y.Outcomes.FailedOnlyOnTarget,
			FailedOnlyInOriginal: x.Outcomes.FailedOnlyInOriginal + y.Outcomes.FailedOnlyInOriginal,
		},
		Reader: ReaderCounts{
			Events:      x.Reader.Events + y.Reader.Events,
			BudgetWaits: x.Reader.BudgetWaits + y.Reader.BudgetWaits,
			OverBudget:  x.Reader.OverBudget + y.Reader.OverBudget,
			// Readers on several machines each had their own
			// memory: the most any of them held.
			MaxBufferedBytes: max(x.Reader.MaxBufferedBytes, y.Reader.MaxBufferedBytes),
		},
	}
	m.Outcomes.SetRates()
	if x.Destructive != nil || y.Destructive != nil {
		m.Destructive = addCounts(addCounts(nil, x.Destructive), y.Destructive)
	}
	// Parts that ran at once took as long as from the first start to the
	// last end; without the times, the longer part.
	if m.StartedAt != 0 && m.EndedAt > m.StartedAt {
		m.WallSeconds = float64(m.EndedAt-m.StartedAt) / 1e6
	} else {
		m.WallSeconds = max(x.WallSeconds, y.WallSeconds)
	}
	var err error
	if m.Lag, err = mergeDist(a, b, x.Lag, y.Lag); err != nil {
		return nil, err
	}
	if m.SyncWait, err = mergeDist(a, b, x.SyncWait, y.SyncWait); err != nil {
		return nil, err
	}
	if m.Sync, err = mergeSync(a, b, x.Sync, y.Sync); err != nil {
		return nil, err
	}
	if x.LagSources != nil || y.LagSources != nil {
		m.LagSources = &LagSources{}
		for _, l := range []*LagSources{x.LagSources, y.LagSources} {
			if l != nil {
				m.LagSources.TargetMS += l.TargetMS
				m.LagSources.ReplayerMS += l.ReplayerMS
			}
		}
	}
	m.Errors = MergeErrorSamples(x.Errors, y.Errors)
	if x.ClientQueries != nil || y.ClientQueries != nil {
		if m.ClientQueries, err = mergeRows(a, b, x.ClientQueries, y.ClientQueries); err != nil {
			return nil, err
		}
	}
	m.TargetLog = mergeTargetLogs(x.TargetLog, y.TargetLog)
	return m, nil
}

func mergeDist(a, b *Result, x, y *Distribution) (*Distribution, error) {
	if x == nil && y == nil {
		return nil, nil
	}
	rx, err := x.Recorder()
	if err != nil {
		return nil, tooOldDist(a, err)
	}
	ry, err := y.Recorder()
	if err != nil {
		return nil, tooOldDist(b, err)
	}
	rx.Merge(ry)
	return rx.Distribution()
}

func tooOldDist(r *Result, err error) error {
	if errors.Is(err, errNoHist) {
		return fmt.Errorf("cannot merge %s: %w", r.Name(), err)
	}
	return fmt.Errorf("cannot merge the distributions of %s: %w", r.Name(), err)
}

// MergeErrorSamples adds the counts of samples of the same SQLSTATE and
// fingerprint and keeps the MaxErrorSamples most frequent. A sample's
// query and message are those of the first list that has it.
func MergeErrorSamples(lists ...[]ErrorSample) []ErrorSample {
	type key struct{ code, fp string }
	byKey := map[key]*ErrorSample{}
	for _, l := range lists {
		for _, e := range l {
			k := key{e.SQLState, e.Fingerprint}
			if o, ok := byKey[k]; ok {
				o.Count += e.Count
			} else {
				c := e
				byKey[k] = &c
			}
		}
	}
	out := make([]ErrorSample, 0, min(len(byKey), MaxErrorSamples))
	for _, e := range slices.SortedFunc(maps.Values(byKey), func(x, y *ErrorSample) int {
		return cmp.Or(cmp.Compare(y.Count, x.Count), cmp.Compare(x.SQLState, y.SQLState), cmp.Compare(x.Fingerprint, y.Fingerprint))
	}) {
		if len(out) == MaxErrorSamples {
			break
		}
		out = append(out, *e)
	}
	return out
}

func mergeTargetLogs(x, y *TargetLog) *TargetLog {
	if x == nil || y == nil {
		if x != nil {
			c := *x
			return &c
		}
		if y != nil {
			c := *y
			return &c
		}
		return nil
	}
	m := &TargetLog{
		Files:             union(x.Files, y.Files),
		Connections:       x.Connections + y.Connections,
		ConnectionsFound:  x.ConnectionsFound + y.ConnectionsFound,
		Executions:        x.Executions + y.Executions,
		ExecutionsMatched: x.ExecutionsMatched + y.ExecutionsMatched,
		Untimed:           x.Untimed + y.Untimed,
	}
	m.Mismatched = slices.Concat(x.Mismatched, y.Mismatched)
	if len(m.Mismatched) > MaxMismatched {
		m.Mismatched = m.Mismatched[:MaxMismatched]
	}
	return m
}

// union returns a's elements then those of b that a lacks.
func union(a, b []string) []string {
	out := slices.Clone(a)
	if out == nil {
		out = []string{}
	}
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func minTime(a, b Time) Time {
	if a == 0 {
		return b
	}
	if b == 0 {
		return a
	}
	return min(a, b)
}

func mergeSync(a, b *Result, x, y *Sync) (*Sync, error) {
	if x == nil || y == nil {
		if x != nil {
			c := *x
			return &c, nil
		}
		if y != nil {
			c := *y
			return &c, nil
		}
		return nil, nil
	}
	if x.Mode != y.Mode {
		return nil, fmt.Errorf("cannot merge %s with %s: sessions synchronized differently (%s and %s)", a.Name(), b.Name(), x.Mode, y.Mode)
	}
	m := &Sync{
		Mode:                x.Mode,
		TimeoutSeconds:      max(x.TimeoutSeconds, y.TimeoutSeconds),
		Waited:              x.Waited + y.Waited,
		Timeouts:            x.Timeouts + y.Timeouts,
		Deadlocks:           x.Deadlocks + y.Deadlocks,
		SessionStartsWaited: x.SessionStartsWaited + y.SessionStartsWaited,
		CatalogMS:           x.CatalogMS + y.CatalogMS,
		CheckReconnects:     x.CheckReconnects + y.CheckReconnects,
		LostTransactions:    x.LostTransactions + y.LostTransactions,
	}
	if x.TimeoutsByCause != nil || y.TimeoutsByCause != nil {
		m.TimeoutsByCause = addCounts(addCounts(nil, x.TimeoutsByCause), y.TimeoutsByCause)
	}
	if lost := slices.Concat(x.LostCommits, y.LostCommits); len(lost) > 0 {
		// Parts of one log share its commit order: by position.
		slices.SortFunc(lost, func(a, b LostCommit) int { return cmp.Compare(a.Position, b.Position) })
		lost = slices.Compact(lost)
		m.LostCommits = lost[:min(len(lost), MaxLostCommits)]
	}
	if x.Notes != nil || y.Notes != nil {
		m.Notes = union(x.Notes, y.Notes)
	}
	return m, nil
}
