package results

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

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
//
// Shards of one input (Part.Of > 1) must be shards of the same input,
// plan and round, and cover different shards; every shard read the whole
// input, so its line accounting (and a replay's events read) are counted
// once, not once per shard, and what each left to the others is counted
// again for the shards the merge still lacks. Two results of the same
// input that are not shards overlap entirely and are refused: their
// statements would count twice.
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
	part, err := mergeParts(a, b)
	if err != nil {
		return nil, err
	}
	sharded := part.Sharded()
	m := New(a.Kind, a.LatencySource)
	m.Source = a.Name() + "+" + b.Name()
	m.Part = part
	m.Partial = a.Partial || b.Partial
	for _, r := range []*Result{a, b} {
		for i, text := range r.Incomplete {
			if !slices.Contains(m.Incomplete, text) {
				m.MarkIncomplete(r.incompleteReason(i), text)
			}
		}
	}
	for _, r := range []*Result{a, b} {
		for i, text := range r.Degraded {
			if !slices.Contains(m.Degraded, text) {
				m.MarkDegraded(r.degradedReason(i), text)
			}
		}
	}
	if a.Warnings != nil || b.Warnings != nil {
		m.Warnings = union(a.Warnings, b.Warnings)
	}
	m.Files = union(a.Files, b.Files)
	m.Input = mergeInputs(a.Input, b.Input, sharded)
	m.FirstTime, m.LastTime = minTime(a.FirstTime, b.FirstTime), max(a.LastTime, b.LastTime)

	switch {
	case sharded:
		// Every shard read the whole input: its lines once, from the
		// shard that read furthest (one interrupted read less).
		if l := furthest(a.Lines, b.Lines); l != nil {
			c := *l
			c.Skipped = addCounts(nil, l.Skipped)
			m.Lines = &c
		}
	case a.Lines != nil || b.Lines != nil:
		m.Lines = &LineCounts{Skipped: map[LineSkip]int64{}}
		for _, l := range []*LineCounts{a.Lines, b.Lines} {
			if l != nil {
				m.Lines.Add(*l)
			}
		}
	}
	switch {
	case sharded:
		// Every shard read the whole capture, as every shard reads
		// the whole log.
		src := b.Messages
		if a.Messages != nil && (b.Messages == nil || a.Messages.Total >= b.Messages.Total) {
			src = a.Messages
		}
		if src != nil {
			c := *src
			c.Skipped = addCounts(nil, src.Skipped)
			c.BeforeRecording = maps.Clone(src.BeforeRecording)
			m.Messages = &c
		}
	case a.Messages != nil || b.Messages != nil:
		m.Messages = &MessageCounts{Skipped: map[MessageSkip]int64{}}
		for _, c := range []*MessageCounts{a.Messages, b.Messages} {
			if c != nil {
				m.Messages.Add(*c)
			}
		}
	}
	m.Statements = addStatements(a.Statements, b.Statements)
	if a.Events != nil || b.Events != nil {
		m.Events = addCounts(addCounts(nil, a.Events), b.Events)
	}
	m.Sessions = addSessions(a.Sessions, b.Sessions)
	m.Filtered = a.Filtered
	m.Filtered.add(b.Filtered)
	if sharded && !part.Whole() {
		m.OtherShards = mergeOthers(a.OtherShards, b.OtherShards)
	}
	m.ErrorsBySQLState = addCounts(addCounts(nil, a.ErrorsBySQLState), b.ErrorsBySQLState)
	m.ErrorsOutsideStatements = a.ErrorsOutsideStatements + b.ErrorsOutsideStatements

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
	// Values kept on one side only are kept: the user asked for them
	// there.
	m.KeptSamples = a.KeptSamples || b.KeptSamples
	m.Samples = mergeSamples(a.Samples, b.Samples)
	m.LoggedPlans = mergeLoggedPlans(a.LoggedPlans, b.LoggedPlans)
	if a.Replay != nil {
		if m.Replay, err = mergeReplays(a, b, sharded); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// degradedReason is the reason of Degraded[i].
func (r *Result) degradedReason(i int) DegradedReason {
	if i < len(r.DegradedReasons) {
		return r.DegradedReasons[i]
	}
	return DegradedOther
}

// incompleteReason is the reason of Incomplete[i].
func (r *Result) incompleteReason(i int) IncompleteReason {
	if i < len(r.IncompleteReasons) {
		return r.IncompleteReasons[i]
	}
	return IncompleteOther
}

// mergeParts checks that a and b may be merged as parts, and returns the
// part their merge covers (nil for a pool of whole inputs).
func mergeParts(a, b *Result) (*Part, error) {
	pa, pb := a.Part, b.Part
	cannot := func(format string, args ...any) error {
		return fmt.Errorf("cannot merge %s with %s: "+format, append([]any{a.Name(), b.Name()}, args...)...)
	}
	if pa.Sharded() != pb.Sharded() {
		return nil, cannot("%s and %s: a shard merges only with the other shards of its input", pa, pb)
	}
	if !pa.Sharded() {
		if a.Input.Same(b.Input) {
			return nil, cannot("both read the same input (%s), whole: merge combines the parts of one workload, and these would count every statement twice", inputName(a.Input))
		}
		if !pa.LoadLevel().Same(pb.LoadLevel()) {
			return nil, cannot("runs of different load levels (%s and %s)", pa.LoadLevel(), pb.LoadLevel())
		}
		if pa != nil && pb != nil && pa.Round == pb.Round && pa.Round > 0 && pa.Side == pb.Side {
			return &Part{Round: pa.Round, Side: pa.Side, Load: pa.Load}, nil
		}
		if pa != nil && pa.Load != nil {
			return &Part{Load: pa.Load}, nil
		}
		return nil, nil
	}
	switch {
	case pa.Of != pb.Of:
		return nil, cannot("their sessions were split into different numbers of shards (%d and %d)", pa.Of, pb.Of)
	case pa.Plan != pb.Plan:
		return nil, cannot("shards of different plans (%q and %q)", pa.Plan, pb.Plan)
	case pa.Round != pb.Round || pa.Side != pb.Side:
		return nil, cannot("shards of different rounds (%s and %s)", pa, pb)
	case pa.Run != pb.Run:
		return nil, cannot("shards of different runs (%q and %q)", pa.Run, pb.Run)
	case !pa.Load.Same(pb.Load):
		return nil, cannot("shards of different load levels (%s and %s)", pa.Load, pb.Load)
	case !pa.Barrier.Same(pb.Barrier):
		return nil, cannot("shards that started at different barriers (%s and %s): they did not replay one schedule", pa.Barrier, pb.Barrier)
	case a.Input.Known() && b.Input.Known() && !a.Input.Same(b.Input):
		return nil, cannot("shards of different inputs (%s and %s): their files differ in size or content", inputName(a.Input), inputName(b.Input))
	}
	shards, overlap := shardsUnion(pa.Shards, pb.Shards)
	if overlap {
		return nil, cannot("the parts overlap: both cover shard %v of %d", intersect(pa.Shards, pb.Shards), pa.Of)
	}
	return &Part{Shards: shards, Of: pa.Of, Plan: pa.Plan, Round: pa.Round, Side: pa.Side, Run: pa.Run, Barrier: pa.Barrier, Load: pa.Load}, nil
}

func intersect(a, b []int) []int {
	var out []int
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func inputName(in *Input) string {
	if in == nil || len(in.Files) == 0 {
		return "unknown"
	}
	names := make([]string, len(in.Files))
	for i, f := range in.Files {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// mergeInputs is the input of a merge: the shards' common one, or the
// files of both pooled inputs.
func mergeInputs(a, b *Input, sharded bool) *Input {
	switch {
	case a == nil && b == nil:
		return nil
	case sharded && a != nil:
		return &Input{Files: slices.Clone(a.Files)}
	case sharded || a == nil:
		return &Input{Files: slices.Clone(b.Files)}
	case b == nil:
		return &Input{Files: slices.Clone(a.Files)}
	}
	m := &Input{Files: slices.Clone(a.Files)}
	for _, f := range b.Files {
		if !slices.Contains(m.Files, f) {
			m.Files = append(m.Files, f)
		}
	}
	return m
}

// furthest is the line accounting that counted the most lines.
func furthest(a, b *LineCounts) *LineCounts {
	if a == nil || b != nil && b.Total > a.Total {
		return b
	}
	return a
}

// mergeOthers counts what shards a and b together left to the shards the
// merge lacks: the input's events (the same for every shard) less what a
// and b each kept. Nil when a shard did not say.
func mergeOthers(a, b *OtherShards) *OtherShards {
	if a == nil || b == nil {
		return nil
	}
	left := func(readA, otherA, readB, otherB int64) (read, other int64) {
		read = max(readA, readB)
		return read, read - (readA - otherA) - (readB - otherB)
	}
	var m OtherShards
	m.ReadEvents, m.Events = left(a.ReadEvents, a.Events, b.ReadEvents, b.Events)
	m.ReadStatements, m.Statements = left(a.ReadStatements, a.Statements, b.ReadStatements, b.Statements)
	m.ReadSessions, m.Sessions = left(a.ReadSessions, a.Sessions, b.ReadSessions, b.Sessions)
	return &m
}

// MissingShards lists the shards of r's input that r does not cover; nil
// for a result of its whole input.
func (r *Result) MissingShards() []int {
	p := r.Part
	if p.Whole() {
		return nil
	}
	var out []int
	for k := range p.Of {
		if !slices.Contains(p.Shards, k) {
			out = append(out, k)
		}
	}
	return out
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
		CreatedElsewhereRetries: a.CreatedElsewhereRetries + b.CreatedElsewhereRetries,
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

// sameReplays refuses to merge replays run otherwise: at other speeds,
// a dry run with one that ran, a pooled replay with one that was not.
func sameReplays(a, b *Result) error {
	x, y := a.Replay, b.Replay
	switch {
	case x.Speed != y.Speed:
		return fmt.Errorf("cannot merge %s with %s: replays at different speeds (%g and %g)", a.Name(), b.Name(), x.Speed, y.Speed)
	case x.DryRun != y.DryRun:
		return fmt.Errorf("cannot merge %s with %s: only one is a dry run", a.Name(), b.Name())
	case x.Pooled != y.Pooled:
		return fmt.Errorf("cannot merge %s with %s: only one replayed its sessions as a pool (--pool)", a.Name(), b.Name())
	}
	return nil
}

func mergeReplays(a, b *Result, sharded bool) (*Replay, error) {
	x, y := a.Replay, b.Replay
	if err := sameReplays(a, b); err != nil {
		return nil, err
	}
	m := &Replay{
		DryRun:           x.DryRun,
		Speed:            x.Speed,
		Pooled:           x.Pooled,
		StartedAt:        minTime(x.StartedAt, y.StartedAt),
		EndedAt:          max(x.EndedAt, y.EndedAt),
		ClientCPUSeconds: x.ClientCPUSeconds + y.ClientCPUSeconds,
		Lost:             x.Lost + y.Lost,
		ReplayerDelayed:  x.ReplayerDelayed + y.ReplayerDelayed,
		TargetLocal:      x.TargetLocal || y.TargetLocal,
		Outcomes: Outcomes{
			Ran:                            x.Outcomes.Ran + y.Outcomes.Ran,
			OriginalFailed:                 x.Outcomes.OriginalFailed + y.Outcomes.OriginalFailed,
			BothFailed:                     x.Outcomes.BothFailed + y.Outcomes.BothFailed,
			FailedOnlyOnTarget:             x.Outcomes.FailedOnlyOnTarget + y.Outcomes.FailedOnlyOnTarget,
			Answered:                       x.Outcomes.Answered + y.Outcomes.Answered,
			AnswerDiffers:                  x.Outcomes.AnswerDiffers + y.Outcomes.AnswerDiffers,
			AnswerDiffersExplained:         sumCounts(x.Outcomes.AnswerDiffersExplained, y.Outcomes.AnswerDiffersExplained),
			AnswerDiffersUnexplained:       x.Outcomes.AnswerDiffersUnexplained + y.Outcomes.AnswerDiffersUnexplained,
			AnswerDiffersTargetData:        x.Outcomes.AnswerDiffersTargetData + y.Outcomes.AnswerDiffersTargetData,
			AnswerDiffersTargetDataByTable: sumCounts(x.Outcomes.AnswerDiffersTargetDataByTable, y.Outcomes.AnswerDiffersTargetDataByTable),
			AnswerDiffersSuspect:           x.Outcomes.AnswerDiffersSuspect + y.Outcomes.AnswerDiffersSuspect,
			AnswerDiffersSuspectByTable:    sumCounts(x.Outcomes.AnswerDiffersSuspectByTable, y.Outcomes.AnswerDiffersSuspectByTable),
			AnswerTaintByRelation:          x.Outcomes.AnswerTaintByRelation || y.Outcomes.AnswerTaintByRelation,
			FailedOnlyInOriginal:           x.Outcomes.FailedOnlyInOriginal + y.Outcomes.FailedOnlyInOriginal,
			OnlyOnTargetBySQLState:         sumKnown(x.Outcomes.OnlyOnTargetBySQLState, y.Outcomes.OnlyOnTargetBySQLState),
			OnlyOnTargetBakedIDs:           x.Outcomes.OnlyOnTargetBakedIDs + y.Outcomes.OnlyOnTargetBakedIDs,
			OnlyOnTargetAfterFastPath:      x.Outcomes.OnlyOnTargetAfterFastPath + y.Outcomes.OnlyOnTargetAfterFastPath,
			OnlyOnTargetSessionState:       x.Outcomes.OnlyOnTargetSessionState + y.Outcomes.OnlyOnTargetSessionState,
		},
		Reader: ReaderCounts{
			Events:      x.Reader.Events + y.Reader.Events,
			BudgetWaits: x.Reader.BudgetWaits + y.Reader.BudgetWaits,
			OverBudget:  x.Reader.OverBudget + y.Reader.OverBudget,
			// Readers on several machines each had their own
			// memory: the most any of them held.
			MaxBufferedBytes: max(x.Reader.MaxBufferedBytes, y.Reader.MaxBufferedBytes),
			BudgetBytes:      max(x.Reader.BudgetBytes, y.Reader.BudgetBytes),
			// The readers waited side by side: the longest wait.
			BudgetWaitMS: max(x.Reader.BudgetWaitMS, y.Reader.BudgetWaitMS),
		},
	}
	if sharded {
		// Every shard read the whole input.
		m.Reader.Events = max(x.Reader.Events, y.Reader.Events)
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
	if sharded {
		m.Finish, m.Window = mergeFinish(x.Finish, y.Finish), mergeWindows(a, b)
	}
	err := mergeTimes(a, b, m)
	if err != nil {
		return nil, err
	}
	if m.Sync, err = mergeSync(a, b, x.Sync, y.Sync); err != nil {
		return nil, err
	}
	// Parts replayed with different thresholds: the stricter one.
	switch {
	case x.MaxLagMS == nil:
		m.MaxLagMS = y.MaxLagMS
	case y.MaxLagMS == nil || *x.MaxLagMS <= *y.MaxLagMS:
		m.MaxLagMS = x.MaxLagMS
	default:
		m.MaxLagMS = y.MaxLagMS
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
	m.DifferingAnswers, m.DifferingAnswersDropped = mergeDifferingAnswers(x, y)
	if x.ClientQueries != nil || y.ClientQueries != nil {
		if m.ClientQueries, err = mergeRows(a, b, x.ClientQueries, y.ClientQueries); err != nil {
			return nil, err
		}
	}
	m.TargetLog = mergeTargetLogs(x.TargetLog, y.TargetLog)
	m.Shards = mergeShardRuns(x.Shards, y.Shards)
	m.StartupSettings = mergeStartup(x.StartupSettings, y.StartupSettings)
	m.StartDigests = cmp.Or(x.StartDigests, y.StartDigests) // one target, one start
	m.BatchInserts = mergeBatch(x.BatchInserts, y.BatchInserts)
	m.Leftovers = mergeLeftovers(x.Leftovers, y.Leftovers)
	if x.Preamble != nil || y.Preamble != nil {
		m.Preamble = &Preamble{}
		for _, p := range []*Preamble{x.Preamble, y.Preamble} {
			if p != nil {
				m.Preamble.Sessions += p.Sessions
				m.Preamble.Statements += p.Statements
				m.Preamble.Failed += p.Failed
			}
		}
	}
	return m, nil
}

// mergeTimes merges a's and b's distributions of times into m: the
// lag, the sync waits, the connections' setup.
func mergeTimes(a, b *Result, m *Replay) error {
	x, y := a.Replay, b.Replay
	var err error
	if m.Lag, err = mergeDist(a, b, x.Lag, y.Lag); err != nil {
		return err
	}
	if m.SyncWait, err = mergeDist(a, b, x.SyncWait, y.SyncWait); err != nil {
		return err
	}
	m.Connections, err = mergeConnections(a, b, x.Connections, y.Connections)
	return err
}

// mergeFinish is how far behind shards on one schedule finished: with
// the last of them; nil when either does not say.
func mergeFinish(x, y *Finish) *Finish {
	if x == nil || y == nil {
		return nil
	}
	return &Finish{ScheduleSeconds: max(x.ScheduleSeconds, y.ScheduleSeconds), BehindSeconds: max(x.BehindSeconds, y.BehindSeconds)}
}

// mergeWindows is the schedule window (Window) of shards a and b,
// replayed on one schedule: their statements, calls and each query's
// round trips within it added up, and the longest figures of time. A
// shard without a window of its own issued everything within it when it
// kept to its schedule (its lag within its threshold): its whole counts
// are its window's. Nil when neither has one, when either stopped early,
// and when one fell behind without one (its end known only after it had
// passed: which of its statements came after is not known).
func mergeWindows(a, b *Result) *Window {
	if a.Window == nil && b.Window == nil {
		return nil
	}
	x, okx := windowOf(a)
	y, oky := windowOf(b)
	if !okx || !oky {
		return nil
	}
	m := &Window{Seconds: max(x.Seconds, y.Seconds), AfterSeconds: max(x.AfterSeconds, y.AfterSeconds), End: max(x.End, y.End),
		Statements: x.Statements + y.Statements, AfterStatements: x.AfterStatements + y.AfterStatements,
		Calls: x.Calls + y.Calls, AfterCalls: x.AfterCalls + y.AfterCalls, Queries: []WindowQuery{}}
	byFP := map[string]int{}
	for _, q := range slices.Concat(x.Queries, y.Queries) {
		i, ok := byFP[q.Fingerprint]
		if !ok {
			byFP[q.Fingerprint] = len(m.Queries)
			m.Queries = append(m.Queries, WindowQuery{Fingerprint: q.Fingerprint})
			i = len(m.Queries) - 1
		}
		w := &m.Queries[i]
		w.Calls += q.Calls
		w.TimedCalls += q.TimedCalls
		w.TotalMS += q.TotalMS
	}
	for i := range m.Queries {
		if w := &m.Queries[i]; w.TimedCalls > 0 {
			w.MeanMS = w.TotalMS / float64(w.TimedCalls)
		}
	}
	slices.SortFunc(m.Queries, func(p, q WindowQuery) int {
		return cmp.Or(cmp.Compare(q.Calls, p.Calls), cmp.Compare(p.Fingerprint, q.Fingerprint))
	})
	return m
}

// windowOf is r's schedule window for mergeWindows: its own, or, for a
// paced replay that ran whole and kept to its schedule without one, the
// whole of it (its round trips: ClientQueries where its latencies are
// the server's); false for one that did neither.
func windowOf(r *Result) (*Window, bool) {
	if r.Window != nil {
		return r.Window, true
	}
	if r.Partial || r.Unpaced() || r.DryRun || r.Finish == nil {
		return nil, false
	}
	if _, lagged := r.Lagged(); lagged {
		return nil, false
	}
	rows := r.Queries
	if r.LatencySource.ServerSide() && r.ClientQueries != nil {
		rows = r.ClientQueries
	}
	w := &Window{Seconds: r.Finish.ScheduleSeconds, Statements: r.Statements.Total}
	for _, q := range rows {
		w.Calls += q.Calls
		if q.Calls > 0 {
			w.Queries = append(w.Queries, WindowQuery{Fingerprint: q.Fingerprint, Calls: q.Calls, TimedCalls: q.TimedCalls, TotalMS: q.TotalMS})
		}
	}
	return w, true
}

// mergeStartup adds what two parts of a replay knew of their sessions'
// startup settings: their counts, the target's values of the first part
// that read them, and the first part's note, which names its own figures.
func mergeStartup(x, y *StartupSettings) *StartupSettings {
	if x == nil || y == nil {
		if x == nil {
			return y
		}
		return x
	}
	m := *x
	m.Recorded = x.Recorded && y.Recorded
	m.SessionsWithSettings += y.SessionsWithSettings
	m.DateTimeDiffers += y.DateTimeDiffers
	if len(m.Target) == 0 {
		m.Target = y.Target
	}
	m.KnownClients = slices.Clone(x.KnownClients)
	for _, c := range y.KnownClients {
		if i := slices.IndexFunc(m.KnownClients, func(k KnownClient) bool { return k.Application == c.Application }); i >= 0 {
			m.KnownClients[i].Sessions += c.Sessions
		} else {
			m.KnownClients = append(m.KnownClients, c)
		}
	}
	m.Suspect = x.Suspect || y.Suspect
	if m.Note == "" {
		m.Note = y.Note
	}
	return &m
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
		ShardLost:           x.ShardLost + y.ShardLost,
		ByRow:               x.ByRow + y.ByRow,
		KeyNotLogged:        x.KeyNotLogged + y.KeyNotLogged,
		Scope:               x.Scope,
	}
	if y.Scope == SyncWithinShard {
		// The merge kept order only as far as its least part did.
		m.Scope = y.Scope
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

// sumCounts adds two maps of counts; nil when both are empty.
func sumCounts(x, y map[string]int64) map[string]int64 {
	if len(x)+len(y) == 0 {
		return nil
	}
	return summed(x, y)
}

// sumKnown sums two counts by key; nil when either is nil (not counted).
func sumKnown(x, y map[string]int64) map[string]int64 {
	if x == nil || y == nil {
		return nil
	}
	return summed(x, y)
}

// summed is a new map of x's and y's counts added by key, zeros kept.
func summed(x, y map[string]int64) map[string]int64 {
	m := make(map[string]int64, len(x)+len(y))
	for k, v := range x {
		m[k] += v
	}
	for k, v := range y {
		m[k] += v
	}
	return m
}

// mergeBatch adds the batching counts of two parts; the WAL is -1 when
// either part could not read it.
func mergeBatch(x, y *BatchInserts) *BatchInserts {
	if x == nil || y == nil {
		if x == nil {
			x = y
		}
		if x == nil {
			return nil
		}
		c := *x
		return &c
	}
	m := &BatchInserts{Max: max(x.Max, y.Max), Statements: x.Statements + y.Statements, Batches: x.Batches + y.Batches,
		Rows: x.Rows + y.Rows, InsertMS: x.InsertMS + y.InsertMS, WALBytes: x.WALBytes + y.WALBytes}
	if x.WALBytes < 0 || y.WALBytes < 0 {
		m.WALBytes = -1
	}
	for _, src := range []*BatchInserts{x, y} {
		for k, v := range src.NotBatched {
			if m.NotBatched == nil {
				m.NotBatched = map[string]int64{}
			}
			m.NotBatched[k] += v
		}
		for k, v := range src.Tables {
			if m.Tables == nil {
				m.Tables = map[string]int64{}
			}
			m.Tables[k] += v
		}
	}
	return m
}

// mergeDifferingAnswers is x's differing answers then y's, at most
// MaxDifferingAnswers, and how many were dropped.
func mergeDifferingAnswers(x, y *Replay) ([]DifferingAnswer, int64) {
	if x.DifferingAnswers == nil && y.DifferingAnswers == nil {
		return nil, x.DifferingAnswersDropped + y.DifferingAnswersDropped
	}
	all := append(append(make([]DifferingAnswer, 0, len(x.DifferingAnswers)+len(y.DifferingAnswers)), x.DifferingAnswers...), y.DifferingAnswers...)
	dropped := x.DifferingAnswersDropped + y.DifferingAnswersDropped
	if len(all) > MaxDifferingAnswers {
		dropped += int64(len(all) - MaxDifferingAnswers)
		all = all[:MaxDifferingAnswers]
	}
	return all, dropped
}
