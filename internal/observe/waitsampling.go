package observe

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// probeWaitSampling decides where wait events come from: pg_wait_sampling
// when it is loaded, created in the observer's database, readable and
// gives query ids, else pg_stat_activity. c.WaitSampling is what
// extensions() found: ExtInstalled, ExtAvailable or ExtMissing.
func probeWaitSampling(ctx context.Context, conn *pgx.Conn, c *Capabilities) {
	c.WaitSource = WaitsFromActivity
	db := c.Database
	switch c.WaitSampling.Status {
	case ExtInstalled:
		if !c.pws.preloaded {
			c.WaitSampling.Status = ExtNotPreloaded
			c.WaitSourceReason = "pg_wait_sampling is created in database " + db + " but not loaded: add it to shared_preload_libraries and restart"
			return
		}
	case ExtAvailable:
		if c.pws.preloaded {
			c.WaitSampling.Status = ExtNotCreated
			c.WaitSourceReason = "pg_wait_sampling is loaded but not created in database " + db + ": CREATE EXTENSION pg_wait_sampling there"
		} else {
			c.WaitSourceReason = "pg_wait_sampling is packaged on the server but not used: add it to shared_preload_libraries, restart, and CREATE EXTENSION pg_wait_sampling in database " + db
		}
		return
	default:
		c.WaitSampling.Status = ExtMissing
		c.WaitSourceReason = "pg_wait_sampling is not installed on the server"
		return
	}
	var period string
	var profilePID, profileQueries, sampleCPU string
	err := conn.QueryRow(ctx, tag+`SELECT quote_ident(n.nspname), e.extversion,
		coalesce(current_setting('pg_wait_sampling.profile_period', true), ''),
		coalesce(current_setting('pg_wait_sampling.profile_pid', true), ''),
		coalesce(current_setting('pg_wait_sampling.profile_queries', true), ''),
		coalesce(current_setting('pg_wait_sampling.sample_cpu', true), '')
		FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_wait_sampling'`).
		Scan(&c.pws.schema, &c.WaitSamplingVersion, &period, &profilePID, &profileQueries, &sampleCPU)
	if err == nil {
		_, err = conn.Exec(ctx, tag+"SELECT 1 FROM "+c.pws.schema+".pg_wait_sampling_profile LIMIT 1")
	}
	if err != nil {
		c.WaitSampling = unreadable(err)
		c.WaitSourceReason = "pg_wait_sampling is created in database " + db + " but cannot be read (" + err.Error() + ")"
		return
	}
	c.pws.periodMS, _ = strconv.Atoi(period)
	c.pws.profilePID = profilePID != "off"
	c.pws.profileQueries = profileQueries != "off"
	c.pws.sampleCPU = sampleCPU == "on"
	switch {
	case c.pws.periodMS <= 0:
		c.WaitSourceReason = "pg_wait_sampling.profile_period is " + strconv.Quote(period) + ": no profile is collected"
		return
	case !c.pws.profileQueries:
		c.WaitSourceReason = "pg_wait_sampling.profile_queries is off: its samples name no query, while pg_stat_activity's do"
		return
	case c.ComputeQueryID == "off" || (c.ComputeQueryID == "auto" && !c.pgssPreloaded):
		c.WaitSourceReason = "the server computes no query id (compute_query_id = " + c.ComputeQueryID +
			" without pg_stat_statements): pg_wait_sampling's samples would name no query, while pg_stat_activity's texts do"
		return
	}
	c.WaitSource = WaitsFromPGWaitSampling
	c.WaitSourceReason = fmt.Sprintf("pg_wait_sampling %s is loaded and created in database %s: the server samples every backend every %d ms (pg_wait_sampling.profile_period)",
		c.WaitSamplingVersion, db, c.pws.periodMS)
}

// pwsKey is a pg_wait_sampling_profile entry.
type pwsKey struct {
	pid        int32
	typ, event string
	queryid    int64
}

// pwsProc is what pg_stat_activity told of a pid while it was alive.
type pwsProc struct {
	backendType string
	datid       uint32
}

// refWait is a count of samples of one wait of one query ref ("q:dbid:id",
// dbid 0 when unknown; "" for no query).
type refWait struct {
	ref string
	w   waitKey
}

// pwsInterval is what the profile gained between two snapshots.
type pwsInterval struct {
	start, end time.Time
	rounds     int64 // the collector's rounds in it: duration / period
	waits      map[refWait]int64
}

// maxPWSEntries bounds the profile entries kept from one snapshot to the
// next (the profile is per pid, and grows with every backend the server
// ever had until someone resets it).
const maxPWSEntries = 200_000

// pwsTracker sums pg_wait_sampling_profile deltas snapshot to snapshot.
// It never resets the profile, which would take it from others.
type pwsTracker struct {
	query    string
	periodMS int64
	perPID   bool

	prev      map[pwsKey]int64
	prevAt    time.Time
	procs     map[int32]pwsProc
	intervals []*pwsInterval

	snapshots int
	// restarted counts entries whose count went down: the profile was
	// reset (pg_wait_sampling_reset_profile()) between two snapshots.
	restarted int
	// vanished counts entries gone from one snapshot to the next.
	vanished int
	// idle counts samples left out as idle sessions (Client/ClientRead
	// with no query), background counts those of other processes than
	// client backends and parallel workers, unknown those of exited
	// backends never seen in pg_stat_activity and running no query.
	idle, background, unknown int64
	truncated                 bool
}

func newPWSTracker(c *Capabilities) *pwsTracker {
	// Joined with pg_stat_activity to tell client backends from the
	// others while they are alive; the observer's own backend is left
	// out (with profile_pid off every pid is 0 and its samples are told
	// by its statements instead).
	q := tag + `SELECT p.pid, coalesce(a.backend_type, ''), coalesce(a.datid, 0), coalesce(p.event_type, ''), coalesce(p.event, ''),
	coalesce(p.queryid, 0), p.count
FROM ` + c.pws.schema + `.pg_wait_sampling_profile p LEFT JOIN pg_stat_activity a ON p.pid <> 0 AND a.pid = p.pid
WHERE p.pid <> pg_backend_pid() AND p.event_type IS DISTINCT FROM 'Activity'`
	return &pwsTracker{query: q, periodMS: int64(c.pws.periodMS), perPID: c.pws.profilePID, procs: map[int32]pwsProc{}}
}

// snapshot reads the profile and adds what it gained since the last
// snapshot as an interval. The first snapshot is the baseline.
func (t *pwsTracker) snapshot(ctx context.Context, conn *pgx.Conn, now time.Time) error {
	rows, err := conn.Query(ctx, t.query)
	if err != nil {
		return fmt.Errorf("pg_wait_sampling_profile: %w", err)
	}
	cur := make(map[pwsKey]int64, len(t.prev))
	var (
		k     pwsKey
		btype string
		datid uint32
		count int64
	)
	_, err = pgx.ForEachRow(rows, []any{&k.pid, &btype, &datid, &k.typ, &k.event, &k.queryid, &count}, func() error {
		if len(cur) >= maxPWSEntries {
			t.truncated = true
			return nil
		}
		cur[k] += count
		if btype != "" && k.pid != 0 {
			t.procs[k.pid] = pwsProc{btype, datid}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("pg_wait_sampling_profile: %w", err)
	}
	t.snapshots++
	prev, prevAt := t.prev, t.prevAt
	t.prev, t.prevAt = cur, now
	if prev == nil {
		return nil
	}
	iv := &pwsInterval{start: prevAt, end: now, waits: map[refWait]int64{}}
	if t.periodMS > 0 {
		iv.rounds = (now.Sub(prevAt).Milliseconds() + t.periodMS/2) / t.periodMS
	}
	for k, c := range cur {
		p, ok := prev[k]
		d := c - p
		if ok && c < p {
			// Reset since: all of it is new.
			d = c
			t.restarted++
		}
		if d > 0 {
			t.add(iv, k, d)
		}
	}
	for k := range prev {
		if _, ok := cur[k]; !ok {
			t.vanished++
		}
	}
	t.intervals = append(t.intervals, iv)
	return nil
}

// add counts d samples of entry k, unless they are not a client's work.
func (t *pwsTracker) add(iv *pwsInterval, k pwsKey, d int64) {
	if k.typ == "Client" && k.event == "ClientRead" && k.queryid == 0 {
		// An idle session (or idle in transaction) waiting for its
		// client: pg_stat_activity's sampling leaves these out too.
		t.idle += d
		return
	}
	var datid uint32
	if t.perPID {
		p, seen := t.procs[k.pid]
		switch {
		case seen && p.backendType != "client backend" && p.backendType != "parallel worker":
			t.background += d
			return
		case !seen && k.queryid == 0:
			// Exited before any snapshot saw it, running no
			// query: an autovacuum worker as likely as a client.
			t.unknown += d
			return
		}
		datid = p.datid
	}
	typ, ev := k.typ, k.event
	if typ == "" {
		typ, ev = "CPU", "CPU"
	}
	ref := ""
	if k.queryid != 0 {
		ref = "q:" + strconv.FormatUint(uint64(datid), 10) + ":" + strconv.FormatInt(k.queryid, 10)
	}
	iv.waits[refWait{ref, waitKey{typ, ev}}] += d
}

// buildWaitsPWS makes the wait profile from pg_wait_sampling's deltas:
// per fingerprint through the query ids, and over time in buckets of the
// snapshot interval.
func (o *Collector) buildWaitsPWS(e *Evidence, r *resolver) {
	t := o.pws
	w := &e.Waits
	w.SampleIntervalMS = float64(t.periodMS)
	w.CPUSampled = o.caps.pws.sampleCPU
	w.Snapshots = t.snapshots
	ex := &WaitExcluded{Idle: t.idle, Background: t.background, Unknown: t.unknown}
	w.Excluded = ex

	// The observer's own statements, known by their text.
	own := map[int64]bool{}
	if o.pgss != nil {
		for qk := range o.pgss.texts {
			if o.pgss.own(qk) {
				own[qk.queryid] = true
			}
		}
	}
	ivs := t.intervals
	width := o.opts.Interval.Milliseconds()
	for len(ivs) > maxBuckets {
		ivs = mergeIntervals(ivs)
		width *= 2
	}
	all := map[waitKey]int64{}
	byFP := map[string]*qagg{}
	perBucket := map[string][]int64{}
	items := map[string]struct {
		fp, query string
		own       bool
	}{}
	for i, iv := range ivs {
		w.Rounds += iv.rounds
		for rw, v := range iv.waits {
			it, ok := items[rw.ref]
			if !ok {
				item := r.ref(rw.ref)
				it.fp, it.query = item.Fingerprint, item.Query
				if rw.ref != "" {
					id, _ := strconv.ParseInt(rw.ref[strings.LastIndexByte(rw.ref, ':')+1:], 10, 64)
					it.own = own[id]
				}
				items[rw.ref] = it
			}
			if it.own {
				ex.Own += v
				continue
			}
			w.Samples += v
			all[rw.w] += v
			a := byFP[it.fp]
			if a == nil {
				a = &qagg{qw: &QueryWaits{Fingerprint: it.fp, Query: it.query}, events: map[waitKey]int64{}}
				byFP[it.fp] = a
				perBucket[it.fp] = make([]int64, len(ivs))
			}
			a.qw.Samples += v
			a.events[rw.w] += v
			perBucket[it.fp][i] += v
		}
	}
	finishWaits(w, all, byFP, perBucket, o.opts.Top)
	if len(ivs) > 0 {
		ws, add := newWaitSeries(ivs[0].start, width, len(ivs), w.Events)
		for i, iv := range ivs {
			ws.Rounds[i] = iv.rounds
			for rw, v := range iv.waits {
				if !items[rw.ref].own {
					add(i, rw.w, v)
				}
			}
		}
		w.OverTime = ws
	}

	c := o.caps
	note := fmt.Sprintf("wait events come from pg_wait_sampling %s: the server samples every backend every %d ms; "+
		"its profile is read at the start, every %s and at the end, and its deltas counted (it is never reset), per query through its query ids; "+
		"idle sessions (Client/ClientRead with no query) and processes other than client backends and parallel workers are left out",
		c.WaitSamplingVersion, t.periodMS, o.opts.Interval)
	if !w.CPUSampled {
		note += "; a backend running on CPU is not sampled (pg_wait_sampling.sample_cpu is off or, before 1.1.5, absent): samples are waits only, and samples / rounds is the mean number of sessions waiting"
	}
	e.Notes = append(e.Notes, note)
	if !t.perPID {
		e.Notes = append(e.Notes, "pg_wait_sampling.profile_pid is off: the profile is not per backend, so the observer's own waits are told by its statements, "+
			"and background processes' waits other than Activity (with no query) count as of an unknown query")
	}
	if t.restarted > 0 || t.vanished > 0 {
		e.Warnings = append(e.Warnings, fmt.Sprintf("pg_wait_sampling's profile was reset during the observation (%d entries restarted from zero, %d vanished): "+
			"the samples between the snapshot before and the reset are lost (snapshots every %s)", t.restarted, t.vanished, o.opts.Interval))
	}
	if t.truncated {
		e.Warnings = append(e.Warnings, fmt.Sprintf("pg_wait_sampling's profile has more than %d entries (it is per backend and only a reset empties it): "+
			"entries past them were not counted", maxPWSEntries))
	}
}

// mergeIntervals merges intervals two by two.
func mergeIntervals(ivs []*pwsInterval) []*pwsInterval {
	out := make([]*pwsInterval, 0, (len(ivs)+1)/2)
	for i := 0; i < len(ivs); i += 2 {
		m := &pwsInterval{start: ivs[i].start, end: ivs[i].end, rounds: ivs[i].rounds, waits: maps.Clone(ivs[i].waits)}
		if i+1 < len(ivs) {
			m.end = ivs[i+1].end
			m.rounds += ivs[i+1].rounds
			for k, v := range ivs[i+1].waits {
				m.waits[k] += v
			}
		}
		out = append(out, m)
	}
	return out
}
