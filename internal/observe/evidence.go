package observe

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/timeline"
)

// TimeLayout is how times are written, as in timelines.
const TimeLayout = timeline.TimeLayout

// Version is Evidence.Version; docs/evidence-json.md describes it.
const Version = 1

// Evidence is what an observation found; docs/evidence-json.md documents
// its JSON.
type Evidence struct {
	Version      int          `json:"version"`
	Start        string       `json:"start"`
	End          string       `json:"end"`
	DurationS    float64      `json:"duration_s"`
	Capabilities Capabilities `json:"capabilities"`
	// Warnings are what makes the evidence incomplete or the server's
	// figures misleading; Notes are how it was gathered.
	Warnings []string `json:"warnings"`
	Notes    []string `json:"notes"`
	// Statements is nil without a readable pg_stat_statements.
	Statements *Statements `json:"statements,omitempty"`
	Waits      Waits       `json:"waits"`
	Throughput *Throughput `json:"throughput,omitempty"`
	// Tables are the tables updated during the observation, with how
	// many of their updates were HOT and their indexes (tables.go);
	// nil when they could not be read.
	Tables   []TableUpdates `json:"tables,omitempty"`
	Sampling Sampling       `json:"sampling"`
}

// Statements are pg_stat_statements deltas over the observation.
type Statements struct {
	Snapshots     int     `json:"snapshots"`
	IntervalS     float64 `json:"interval_s"`
	TrackPlanning bool    `json:"track_planning"`
	// Resets are the stats_reset times of the resets seen.
	Resets []string `json:"resets"`
	// Evicted is how many entries pg_stat_statements deallocated.
	Evicted int64 `json:"evicted"`
	// EntriesRestarted counts entries whose counters restarted from
	// zero between two snapshots without a full reset.
	EntriesRestarted int        `json:"entries_restarted"`
	Totals           QueryStats `json:"totals"`
	// Queries are by total (execution plus planning) time, most first;
	// OmittedQueries were left out past MaxQueries (Totals has them).
	Queries        []Query    `json:"queries"`
	OmittedQueries int        `json:"omitted_queries,omitempty"`
	Intervals      []Interval `json:"intervals"`
	// Window is the deltas from the start to the snapshot a replay
	// asked for at the end of its schedule's window (Collector.Mark,
	// results.Window); nil when none was taken.
	Window *StatementsWindow `json:"window,omitempty"`
}

// StatementsWindow is pg_stat_statements' deltas from the observation's
// start to a snapshot taken during it (Collector.Mark), by query.
type StatementsWindow struct {
	// End is when the snapshot was taken (TimeLayout).
	End string `json:"end"`
	// Queries are by fingerprint, most time first, as many as
	// Statements.Queries may hold.
	Queries []WindowQuery `json:"queries"`
}

// WindowQuery is one query's figures within a StatementsWindow.
type WindowQuery struct {
	Fingerprint string  `json:"fingerprint"`
	Calls       int64   `json:"calls"`
	TotalExecMS float64 `json:"total_exec_ms"`
	TotalPlanMS float64 `json:"total_plan_ms"`
	// Restarted: an entry of the query restarted from zero before the
	// snapshot, so its figures may be low.
	Restarted bool `json:"restarted,omitempty"`
}

// MaxQueries bounds Statements.Queries.
const MaxQueries = 1000

// maxQueryText bounds a query's text in the evidence.
const maxQueryText = 10_000

// QueryStats are summed pg_stat_statements deltas.
type QueryStats struct {
	Calls           int64   `json:"calls"`
	TotalExecMS     float64 `json:"total_exec_ms"`
	MeanExecMS      float64 `json:"mean_exec_ms"`
	Plans           int64   `json:"plans"`
	TotalPlanMS     float64 `json:"total_plan_ms"`
	MeanPlanMS      float64 `json:"mean_plan_ms"`
	Rows            int64   `json:"rows"`
	SharedBlksHit   int64   `json:"shared_blks_hit"`
	SharedBlksRead  int64   `json:"shared_blks_read"`
	TempBlksRead    int64   `json:"temp_blks_read"`
	TempBlksWritten int64   `json:"temp_blks_written"`
	WALBytes        int64   `json:"wal_bytes"`
	// SharedBlksDirtied and SharedBlksWritten, WALRecords and WALFPI
	// (full-page images) are 0 before PostgreSQL 13's
	// pg_stat_statements 1.8 (WAL) and 1.1 (blocks).
	SharedBlksDirtied int64 `json:"shared_blks_dirtied"`
	SharedBlksWritten int64 `json:"shared_blks_written"`
	WALRecords        int64 `json:"wal_records"`
	WALFPI            int64 `json:"wal_fpi"`
}

// Query is one fingerprint's evidence.
type Query struct {
	Fingerprint string `json:"fingerprint"`
	// Query is pg_stat_statements' normalized text.
	Query     string   `json:"query"`
	QueryIDs  []int64  `json:"queryids"`
	Databases []string `json:"databases"`
	// Restarted: an entry of this query restarted from zero during the
	// observation (reset or evicted), so its figures may be low.
	Restarted bool `json:"restarted,omitempty"`
	QueryStats
	// WaitSamples counts the samples that saw it active; Waits splits
	// them by wait event.
	WaitSamples int64       `json:"wait_samples"`
	Waits       []WaitCount `json:"waits,omitempty"`
}

// Interval is the pg_stat_statements delta between two snapshots.
type Interval struct {
	Start  string  `json:"start"`
	End    string  `json:"end"`
	Calls  int64   `json:"calls"`
	ExecMS float64 `json:"exec_ms"`
	PlanMS float64 `json:"plan_ms"`
	// Reset: pg_stat_statements_reset() ran in this interval.
	Reset bool `json:"reset,omitempty"`
	// Evicted entries, and entries that restarted from zero.
	Evicted   int64 `json:"evicted,omitempty"`
	Restarted int   `json:"restarted,omitempty"`
}

// WaitCount is a count of samples of one wait event. Type and Event are
// "CPU" for an active backend waiting on nothing PostgreSQL instruments.
type WaitCount struct {
	Type    string  `json:"type"`
	Event   string  `json:"event"`
	Samples int64   `json:"samples"`
	Share   float64 `json:"share"`
}

// Waits is the wait-event profile of active client backends.
type Waits struct {
	// Source is where the samples come from; SourceReason says why.
	Source       WaitSource `json:"source"`
	SourceReason string     `json:"source_reason"`
	// SampleIntervalMS is the effective sampling period: the observer's
	// with pg_stat_activity, pg_wait_sampling.profile_period with
	// pg_wait_sampling.
	SampleIntervalMS float64 `json:"sample_interval_ms"`
	// CPUSampled: an active backend waiting on nothing counts as
	// CPU/CPU. pg_wait_sampling samples only backends in a wait (before
	// 1.1.5, or with pg_wait_sampling.sample_cpu off).
	CPUSampled bool `json:"cpu_sampled"`
	// Rounds are the sampling rounds: the observer's polls, or with
	// pg_wait_sampling the observed time divided by its period.
	Rounds int64 `json:"rounds"`
	// Samples counts backends seen active (or, without CPUSampled, in a
	// wait), over all rounds; divided by Rounds it is the mean number
	// of such sessions.
	Samples int64 `json:"samples"`
	// Snapshots of pg_wait_sampling_profile; Excluded are its samples
	// left out. Both absent with pg_stat_activity.
	Snapshots int           `json:"snapshots,omitempty"`
	Excluded  *WaitExcluded `json:"excluded,omitempty"`
	Events    []WaitCount   `json:"events"`
	// ByQuery is per fingerprint, most samples first; Fingerprint ""
	// gathers active backends whose query is not known.
	ByQuery  []QueryWaits `json:"by_query"`
	OverTime *WaitSeries  `json:"over_time,omitempty"`
}

// WaitExcluded counts pg_wait_sampling samples that are not a client's
// work, left out of the profile as pg_stat_activity's sampling leaves
// them out.
type WaitExcluded struct {
	// Idle: Client/ClientRead with no query, a session idle (or idle in
	// transaction) waiting for its client.
	Idle int64 `json:"idle"`
	// Background: processes other than client backends and parallel
	// workers (checkpointer, autovacuum, WAL senders...).
	Background int64 `json:"background"`
	// Unknown: backends that exited before any snapshot saw them in
	// pg_stat_activity, in waits with no query.
	Unknown int64 `json:"unknown"`
	// Own: the observer's own statements, when the profile is not per
	// pid (its backend is left out by pid otherwise).
	Own int64 `json:"own"`
}

// QueryWaits is one query's wait profile.
type QueryWaits struct {
	Fingerprint string      `json:"fingerprint"`
	Query       string      `json:"query,omitempty"`
	Samples     int64       `json:"samples"`
	Events      []WaitCount `json:"events"`
	// OverTime has its samples per bucket of Waits.OverTime, for the
	// top queries only.
	OverTime []int64 `json:"over_time,omitempty"`
}

// WaitSeries is the profile over time: per bucket, samples of the top
// wait events (the rest as Type "Other"). Samples divided by Rounds is a
// bucket's mean number of sessions in that wait.
type WaitSeries struct {
	Start    string            `json:"start"`
	BucketMS int64             `json:"bucket_ms"`
	Rounds   []int64           `json:"rounds"`
	Series   []WaitSeriesEntry `json:"series"`
}

// WaitSeriesEntry is one wait event's samples per bucket.
type WaitSeriesEntry struct {
	Type    string  `json:"type"`
	Event   string  `json:"event"`
	Samples []int64 `json:"samples"`
}

// maxSeriesEvents bounds the wait events drawn over time.
const maxSeriesEvents = 8

// Throughput is the server's activity over time, in buckets of BucketMS
// from Start: TPS from pg_stat_database (every database, less the
// observer's own transactions), connections from pg_stat_activity.
type Throughput struct {
	Start             string    `json:"start"`
	BucketMS          int64     `json:"bucket_ms"`
	TPS               []float64 `json:"tps"`
	Transactions      []int64   `json:"transactions"`
	Rollbacks         []int64   `json:"rollbacks"`
	Connections       []float64 `json:"connections"`
	ConnectionsMax    []int64   `json:"connections_max"`
	Active            []float64 `json:"active"`
	IdleInTransaction []float64 `json:"idle_in_transaction"`
	TotalTransactions int64     `json:"total_transactions"`
	TotalRollbacks    int64     `json:"total_rollbacks"`
	MeanTPS           float64   `json:"mean_tps"`
}

// Sampling says what observing cost and how regular it was.
type Sampling struct {
	SampleIntervalMS float64 `json:"sample_interval_ms"`
	Rounds           int64   `json:"rounds"`
	// AchievedIntervalMS is the mean time between samples; MaxGapMS the
	// longest.
	AchievedIntervalMS float64 `json:"achieved_interval_ms"`
	MaxGapMS           float64 `json:"max_gap_ms"`
	PGSSSnapshots      int     `json:"pgss_snapshots"`
	// BusyMS is the time the observer spent in its queries and their
	// processing; BusyShare that over the duration: the share of one
	// backend (and one client thread) it kept busy.
	BusyMS         float64 `json:"busy_ms"`
	BusyShare      float64 `json:"busy_share"`
	ActivityMeanMS float64 `json:"activity_mean_ms"`
	PGSSMeanMS     float64 `json:"pgss_mean_ms,omitempty"`
	// WaitSamplingSnapshots are the reads of pg_wait_sampling_profile,
	// WaitSamplingMeanMS their mean time.
	WaitSamplingSnapshots int      `json:"wait_sampling_snapshots,omitempty"`
	WaitSamplingMeanMS    float64  `json:"wait_sampling_mean_ms,omitempty"`
	OwnTransactions       int64    `json:"own_transactions"`
	Errors                []string `json:"errors,omitempty"`
}

// FromResult returns the evidence a result JSON (a replay's, or
// observe's own) carries under "evidence", or nil when it has none.
func FromResult(data []byte) (*Evidence, error) {
	var wrap struct {
		Evidence json.RawMessage `json:"evidence"`
	}
	if err := json.Unmarshal(data, &wrap); err != nil {
		return nil, fmt.Errorf("evidence: %w", err)
	}
	return Decode(wrap.Evidence)
}

// Decode reads evidence as a result carries it (results.Result.Evidence);
// nil for none.
func Decode(data json.RawMessage) (*Evidence, error) {
	if len(data) == 0 || string(data) == "null" {
		return nil, nil
	}
	var ev Evidence
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, fmt.Errorf("evidence: %w", err)
	}
	if ev.Version != Version {
		return nil, fmt.Errorf("evidence: version %d, this pgrehearse reads %d", ev.Version, Version)
	}
	return &ev, nil
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// resolver maps pg_stat_statements entries and wait samples to
// fingerprints.
type resolver struct {
	texts   map[queryKey]string
	refText map[string]string
	byKey   map[queryKey]fingerprint.Item
	ids     map[int64]queryKey // by query id alone, made on first use
}

func (r *resolver) key(qk queryKey) fingerprint.Item {
	if it, ok := r.byKey[qk]; ok {
		return it
	}
	var it fingerprint.Item
	if text, ok := r.texts[qk]; ok {
		// The parser's normalized text, not the server's: the server
		// keeps the constants of utility statements (ALTER ROLE ...
		// PASSWORD '...'), which must not be printed.
		if items := fingerprint.Compute(text); len(items) > 0 {
			it = items[0]
		}
	}
	if it.Fingerprint == "" {
		it = fingerprint.Item{Fingerprint: "queryid:" + strconv.FormatInt(qk.queryid, 10)}
	}
	r.byKey[qk] = it
	return it
}

// byID returns the pg_stat_statements entry with a query id, in the
// database of the lowest oid when several have it.
func (r *resolver) byID(id int64) (queryKey, bool) {
	if r.ids == nil {
		r.ids = map[int64]queryKey{}
		for qk := range r.texts {
			if k, ok := r.ids[qk.queryid]; !ok || qk.dbid < k.dbid {
				r.ids[qk.queryid] = qk
			}
		}
	}
	k, ok := r.ids[id]
	return k, ok
}

// ref resolves a wait sample's query reference.
func (r *resolver) ref(ref string) fingerprint.Item {
	switch {
	case strings.HasPrefix(ref, "q:"):
		parts := strings.SplitN(ref[2:], ":", 2)
		db, _ := strconv.ParseUint(parts[0], 10, 32)
		id, _ := strconv.ParseInt(parts[1], 10, 64)
		qk := queryKey{uint32(db), id}
		if _, ok := r.texts[qk]; ok {
			return r.key(qk)
		}
		if qk.dbid == 0 {
			// pg_wait_sampling names no database: any
			// pg_stat_statements entry of the id.
			if k, ok := r.byID(qk.queryid); ok {
				return r.key(k)
			}
		}
		if text := r.refText[ref]; text != "" {
			if items := fingerprint.Compute(text); len(items) > 0 {
				return items[0]
			}
		}
		return r.key(qk)
	case strings.HasPrefix(ref, "f:"):
		return fingerprint.Item{Fingerprint: ref[2:]}
	}
	return fingerprint.Item{}
}

func waitCounts(m map[waitKey]int64) ([]WaitCount, int64) {
	var total int64
	out := make([]WaitCount, 0, len(m))
	for k, v := range m {
		total += v
		out = append(out, WaitCount{Type: k.typ, Event: k.event, Samples: v})
	}
	for i := range out {
		out[i].Share = round3(float64(out[i].Samples) / float64(total))
	}
	slices.SortFunc(out, func(a, b WaitCount) int {
		return cmp.Or(cmp.Compare(b.Samples, a.Samples), cmp.Compare(a.Type, b.Type), cmp.Compare(a.Event, b.Event))
	})
	return out, total
}

// build turns what the loop gathered into Evidence.
func (o *Collector) build() *Evidence {
	e := &Evidence{
		Version: Version, Start: o.start.UTC().Format(TimeLayout), End: o.end.UTC().Format(TimeLayout),
		DurationS: round3(o.end.Sub(o.start).Seconds()), Capabilities: *o.caps,
		Warnings: []string{}, Notes: []string{},
	}
	r := &resolver{texts: map[queryKey]string{}, refText: o.activity.refText, byKey: map[queryKey]fingerprint.Item{}}
	if o.pgss != nil {
		r.texts = o.pgss.texts
	}
	e.capabilityNotes()
	o.buildWaits(e, r)
	if o.pgss != nil {
		o.buildStatements(e, r)
	}
	o.buildThroughput(e)
	e.Tables = o.tableStats
	if o.tablesErr != nil {
		e.Warnings = append(e.Warnings, fmt.Sprintf("the tables' update counters (pg_stat_user_tables) could not be read: %v", o.tablesErr))
	}

	s := &o.stats
	dur := o.end.Sub(o.start)
	e.Sampling = Sampling{
		SampleIntervalMS: float64(o.opts.SampleInterval) / 1e6, Rounds: s.rounds,
		MaxGapMS: round3(float64(s.maxGap) / 1e6), BusyMS: round3(float64(s.busy) / 1e6),
		OwnTransactions: s.ownXacts,
	}
	if s.rounds > 0 {
		e.Sampling.AchievedIntervalMS = round3(float64(dur) / 1e6 / float64(s.rounds))
		e.Sampling.ActivityMeanMS = round3(float64(s.activityBusy) / 1e6 / float64(s.rounds))
	}
	if dur > 0 {
		e.Sampling.BusyShare = round3(float64(s.busy) / float64(dur))
	}
	if o.pws != nil {
		e.Sampling.WaitSamplingSnapshots = o.pws.snapshots
		if o.pws.snapshots > 0 {
			e.Sampling.WaitSamplingMeanMS = round3(float64(s.pwsBusy) / 1e6 / float64(o.pws.snapshots))
		}
	}
	if o.pgss != nil {
		e.Sampling.PGSSSnapshots = o.pgss.snapshots
		if o.pgss.snapshots > 0 {
			e.Sampling.PGSSMeanMS = round3(float64(s.pgssBusy) / 1e6 / float64(o.pgss.snapshots))
		}
	}
	for _, err := range o.errs {
		e.Sampling.Errors = append(e.Sampling.Errors, err.Error())
	}
	if len(o.errs) > 0 {
		e.Warnings = append(e.Warnings, fmt.Sprintf("observing failed %d times (first: %v): the evidence has gaps", len(o.errs), o.errs[0]))
	}
	if s.reconnects > 0 {
		times := "once"
		if s.reconnects > 1 {
			times = fmt.Sprintf("%d times", s.reconnects)
		}
		e.Warnings = append(e.Warnings, fmt.Sprintf("the observer's connection was lost and made again %s (%.1f s without it): "+
			"counters the server keeps in memory may have restarted with it, and the evidence has a gap there", times, s.disconnected.Seconds()))
	}
	return e
}

func (e *Evidence) capabilityNotes() {
	c := &e.Capabilities
	switch {
	case c.PGSS.Is(ExtInstalled) && !c.TrackPlanning:
		e.Warnings = append(e.Warnings, "pg_stat_statements.track_planning is off: planning time is not measured (plans and plan times are 0) "+
			"and total time is execution only; for a rehearsal turn it on (ALTER SYSTEM SET pg_stat_statements.track_planning = on; SELECT pg_reload_conf())")
	case c.PGSS.Is(ExtNotPreloaded):
		e.Warnings = append(e.Warnings, "pg_stat_statements is created in database "+c.Database+" but not loaded: add it to shared_preload_libraries and restart; no per-query server-side figures")
	case c.PGSS.Is(ExtNotCreated):
		e.Warnings = append(e.Warnings, "pg_stat_statements is loaded but created in no database the observer could reach: CREATE EXTENSION pg_stat_statements (in any database); no per-query server-side figures")
	case c.PGSS.Is(ExtUnavailable):
		e.Warnings = append(e.Warnings, "pg_stat_statements is not available on the server (shared_preload_libraries = 'pg_stat_statements' and CREATE EXTENSION pg_stat_statements): no per-query server-side figures")
	case c.PGSS.Is(ExtUnreadable):
		e.Warnings = append(e.Warnings, "pg_stat_statements is "+c.PGSS.String()+": no per-query server-side figures")
	}
	if c.PGSS.Is(ExtInstalled) && !c.PGSSInfo {
		e.Warnings = append(e.Warnings, "pg_stat_statements "+c.PGSSVersion+" has no pg_stat_statements_info (PostgreSQL 14): resets and evictions are detected only by counters that went down")
	}
	if !c.ReadAllStats {
		e.Warnings = append(e.Warnings, "role "+c.User+" is neither superuser nor a member of pg_read_all_stats: other users' queries and wait events are hidden (GRANT pg_read_all_stats TO "+c.User+")")
	}
	if c.PGSSDatabase != "" {
		e.Notes = append(e.Notes, "pg_stat_statements "+c.PGSSVersion+" read from database "+c.PGSSDatabase+"; it covers every database of the server")
	}
	if c.WaitSource != WaitsFromPGWaitSampling && (c.ComputeQueryID == "off" || c.ComputeQueryID == "") {
		e.Notes = append(e.Notes, "the server computes no query id (compute_query_id): wait samples are tied to queries by their text, and truncated texts (track_activity_query_size) stay unattributed")
	}
}

func (o *Collector) buildStatements(e *Evidence, r *resolver) {
	t := o.pgss
	st := &Statements{
		Snapshots: t.snapshots, IntervalS: o.opts.Interval.Seconds(), TrackPlanning: o.caps.TrackPlanning,
		Resets: slices.Clone(t.resets), Evicted: t.evicted, EntriesRestarted: t.entryRestarts,
		Intervals: t.intervals,
	}
	if st.Resets == nil {
		st.Resets = []string{}
	}
	if st.Intervals == nil {
		st.Intervals = []Interval{}
	}
	type agg struct {
		q   *Query
		c   counters
		dbs map[string]bool
	}
	byFP := map[string]*agg{}
	var total counters
	for qk, c := range t.acc {
		it := r.key(qk)
		a := byFP[it.Fingerprint]
		if a == nil {
			text := it.Query
			if len(text) > maxQueryText {
				text = text[:maxQueryText] + "…"
			}
			a = &agg{q: &Query{Fingerprint: it.Fingerprint, Query: text}, dbs: map[string]bool{}}
			byFP[it.Fingerprint] = a
		}
		a.c.add(*c)
		total.add(*c)
		if !slices.Contains(a.q.QueryIDs, qk.queryid) {
			a.q.QueryIDs = append(a.q.QueryIDs, qk.queryid)
		}
		a.dbs[o.dbName(qk.dbid)] = true
		if t.restarted[qk] {
			a.q.Restarted = true
		}
	}
	waits := map[string]*QueryWaits{}
	for i := range e.Waits.ByQuery {
		waits[e.Waits.ByQuery[i].Fingerprint] = &e.Waits.ByQuery[i]
	}
	for _, a := range byFP {
		a.q.QueryStats = stats(a.c)
		a.q.Databases = slices.Sorted(func(yield func(string) bool) {
			for d := range a.dbs {
				if !yield(d) {
					return
				}
			}
		})
		slices.Sort(a.q.QueryIDs)
		if w := waits[a.q.Fingerprint]; w != nil {
			a.q.WaitSamples, a.q.Waits = w.Samples, w.Events
			if w.Query == "" {
				w.Query = a.q.Query
			}
		}
		st.Queries = append(st.Queries, *a.q)
	}
	slices.SortFunc(st.Queries, func(a, b Query) int {
		return cmp.Or(cmp.Compare(b.TotalExecMS+b.TotalPlanMS, a.TotalExecMS+a.TotalPlanMS), cmp.Compare(a.Fingerprint, b.Fingerprint))
	})
	if len(st.Queries) > MaxQueries {
		st.OmittedQueries = len(st.Queries) - MaxQueries
		st.Queries = st.Queries[:MaxQueries]
	}
	if st.Queries == nil {
		st.Queries = []Query{}
	}
	st.Totals = stats(total)
	st.Window = o.statementsWindow(r)
	e.Statements = st

	if n := len(t.resets); n > 0 {
		e.Warnings = append(e.Warnings, fmt.Sprintf("pg_stat_statements was reset %d time(s) during the observation (stats_reset %s): "+
			"counts since the reset are included, but what ran between the snapshot before it and the reset is lost (snapshots every %s)",
			n, strings.Join(t.resets, ", "), o.opts.Interval))
	}
	if t.evicted > 0 {
		e.Warnings = append(e.Warnings, fmt.Sprintf("pg_stat_statements evicted %d entries during the observation (pg_stat_statements.max = %d): "+
			"queries evicted between two snapshots lose what they ran since the first, and a query evicted and re-created may be counted low; raise pg_stat_statements.max",
			t.evicted, o.caps.PGSSMax))
	}
	if t.entryRestarts > 0 && len(t.resets) == 0 && t.evicted == 0 {
		e.Warnings = append(e.Warnings, fmt.Sprintf("%d pg_stat_statements entries restarted from zero during the observation (reset one by one): their counts since are included, what ran before is partly lost", t.entryRestarts))
	}
}

func stats(c counters) QueryStats {
	s := QueryStats{
		Calls: c.calls, TotalExecMS: round3(c.execMS), Plans: c.plans, TotalPlanMS: round3(c.planMS),
		Rows: c.rows, SharedBlksHit: c.blksHit, SharedBlksRead: c.blksRead,
		TempBlksRead: c.tempRead, TempBlksWritten: c.tempWritten, WALBytes: int64(math.Round(c.walBytes)),
		SharedBlksDirtied: c.blksDirtied, SharedBlksWritten: c.blksWritten, WALRecords: c.walRecords, WALFPI: c.walFPI,
	}
	if c.calls > 0 {
		s.MeanExecMS = round3(c.execMS / float64(c.calls))
	}
	if c.plans > 0 {
		s.MeanPlanMS = round3(c.planMS / float64(c.plans))
	}
	return s
}

func (o *Collector) dbName(oid uint32) string {
	if n, ok := o.dbNames[oid]; ok {
		return n
	}
	return "oid " + strconv.FormatUint(uint64(oid), 10)
}

func (o *Collector) buildWaits(e *Evidence, r *resolver) {
	w := &e.Waits
	w.Source, w.SourceReason = o.caps.WaitSource, o.caps.WaitSourceReason
	if o.pws != nil {
		o.buildWaitsPWS(e, r)
		return
	}
	e.Notes = append(e.Notes, fmt.Sprintf("wait events are sampled from pg_stat_activity every %s: %s; "+
		"waits shorter than the sample interval are seen in proportion to how often they happen", o.opts.SampleInterval, w.SourceReason))
	w.CPUSampled = true
	w.SampleIntervalMS = float64(o.opts.SampleInterval) / 1e6
	w.Rounds = o.activity.rounds
	w.Samples = o.activity.samples

	all := map[waitKey]int64{}
	byFP := map[string]*qagg{}
	// Per bucket samples by fingerprint, for the top queries' series.
	first, n := o.series.span()
	perBucket := map[string][]int64{}
	for i, b := range o.series.buckets {
		for k, v := range b.waits {
			all[k] += v
		}
		for ref, v := range b.queries {
			it := r.ref(ref)
			a := byFP[it.Fingerprint]
			if a == nil {
				a = &qagg{qw: &QueryWaits{Fingerprint: it.Fingerprint, Query: it.Query}, events: map[waitKey]int64{}}
				byFP[it.Fingerprint] = a
			}
			a.qw.Samples += v
			if perBucket[it.Fingerprint] == nil {
				perBucket[it.Fingerprint] = make([]int64, n)
			}
			perBucket[it.Fingerprint][i-first] += v
		}
	}
	for ref, evs := range o.activity.queryWaits {
		it := r.ref(ref)
		for k, v := range evs {
			byFP[it.Fingerprint].events[k] += v
		}
	}
	finishWaits(w, all, byFP, perBucket, o.opts.Top)
	if n == 0 {
		return
	}
	ws, add := newWaitSeries(time.UnixMilli(first*o.series.widthMS), o.series.widthMS, n, w.Events)
	for i, b := range o.series.buckets {
		ws.Rounds[i-first] = b.rounds
		for k, v := range b.waits {
			add(int(i-first), k, v)
		}
	}
	w.OverTime = ws
}

// newWaitSeries returns a series of n buckets for the top events, and
// the function that adds samples of an event to a bucket.
func newWaitSeries(start time.Time, bucketMS int64, n int, events []WaitCount) (*WaitSeries, func(i int, k waitKey, v int64)) {
	ws := &WaitSeries{Start: start.UTC().Format(TimeLayout), BucketMS: bucketMS, Rounds: make([]int64, n)}
	top := map[waitKey]int{}
	for i, wc := range events {
		if i == maxSeriesEvents {
			ws.Series = append(ws.Series, WaitSeriesEntry{Type: "Other", Event: "Other", Samples: make([]int64, n)})
			break
		}
		top[waitKey{wc.Type, wc.Event}] = i
		ws.Series = append(ws.Series, WaitSeriesEntry{Type: wc.Type, Event: wc.Event, Samples: make([]int64, n)})
	}
	return ws, func(i int, k waitKey, v int64) {
		j, ok := top[k]
		if !ok {
			j = maxSeriesEvents
		}
		ws.Series[j].Samples[i] += v
	}
}

func (o *Collector) buildThroughput(e *Evidence) {
	first, n := o.series.span()
	if n == 0 {
		return
	}
	t := &Throughput{
		Start: time.UnixMilli(first * o.series.widthMS).UTC().Format(TimeLayout), BucketMS: o.series.widthMS,
		TPS: make([]float64, n), Transactions: make([]int64, n), Rollbacks: make([]int64, n),
		Connections: make([]float64, n), ConnectionsMax: make([]int64, n), Active: make([]float64, n), IdleInTransaction: make([]float64, n),
	}
	var ms int64
	for i, b := range o.series.buckets {
		k := i - first
		t.Transactions[k], t.Rollbacks[k] = b.xacts, b.rollbacks
		t.TotalTransactions += b.xacts
		t.TotalRollbacks += b.rollbacks
		ms += b.xactMS
		if b.xactMS > 0 {
			t.TPS[k] = round3(float64(b.xacts) * 1000 / float64(b.xactMS))
		}
		if b.rounds > 0 {
			r := float64(b.rounds)
			t.Connections[k] = round3(float64(b.conns) / r)
			t.Active[k] = round3(float64(b.active) / r)
			t.IdleInTransaction[k] = round3(float64(b.idleTx) / r)
		}
		t.ConnectionsMax[k] = b.maxConns
	}
	if ms > 0 {
		t.MeanTPS = round3(float64(t.TotalTransactions) * 1000 / float64(ms))
	}
	e.Throughput = t
}

// qagg gathers one query's wait samples while a profile is built.
type qagg struct {
	qw     *QueryWaits
	events map[waitKey]int64
}

// finishWaits completes w from the samples of every wait (all) and of
// each query (byFP), whichever source they came from: the counts, the
// queries by samples, and the series over time (perBucket) of the top
// queries.
func finishWaits(w *Waits, all map[waitKey]int64, byFP map[string]*qagg, perBucket map[string][]int64, top int) {
	w.Events, _ = waitCounts(all)
	for _, a := range byFP {
		a.qw.Events, _ = waitCounts(a.events)
		w.ByQuery = append(w.ByQuery, *a.qw)
	}
	slices.SortFunc(w.ByQuery, func(a, b QueryWaits) int {
		return cmp.Or(cmp.Compare(b.Samples, a.Samples), cmp.Compare(a.Fingerprint, b.Fingerprint))
	})
	for i := range w.ByQuery {
		if i < top && w.ByQuery[i].Fingerprint != "" {
			w.ByQuery[i].OverTime = perBucket[w.ByQuery[i].Fingerprint]
		}
	}
	if w.ByQuery == nil {
		w.ByQuery = []QueryWaits{}
	}
}

// statementsWindow is the window's deltas by fingerprint (Mark); nil
// without its snapshot.
func (o *Collector) statementsWindow(r *resolver) *StatementsWindow {
	t := o.pgss
	if t.window == nil {
		return nil
	}
	w := &StatementsWindow{End: t.windowAt.UTC().Format(TimeLayout), Queries: []WindowQuery{}}
	byFP := map[string]*WindowQuery{}
	for qk, c := range t.window {
		fp := r.key(qk).Fingerprint
		q := byFP[fp]
		if q == nil {
			q = &WindowQuery{Fingerprint: fp}
			byFP[fp] = q
		}
		q.Calls += c.calls
		q.TotalExecMS += c.execMS
		q.TotalPlanMS += c.planMS
		q.Restarted = q.Restarted || t.windowRestarted[qk]
	}
	for _, q := range byFP {
		q.TotalExecMS, q.TotalPlanMS = round3(q.TotalExecMS), round3(q.TotalPlanMS)
		w.Queries = append(w.Queries, *q)
	}
	slices.SortFunc(w.Queries, func(a, b WindowQuery) int {
		return cmp.Or(cmp.Compare(b.TotalExecMS+b.TotalPlanMS, a.TotalExecMS+a.TotalPlanMS), cmp.Compare(a.Fingerprint, b.Fingerprint))
	})
	if len(w.Queries) > MaxQueries {
		w.Queries = w.Queries[:MaxQueries]
	}
	return w
}
