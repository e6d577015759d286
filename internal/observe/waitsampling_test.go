package observe

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// noWaitSampling fails a test that needs pg_wait_sampling's library:
// the extension is optional for pgrehearse, not for its tests.
func noWaitSampling(t *testing.T, bin string, err error) {
	t.Helper()
	pkg := "postgresql-<major>-pg-wait-sampling"
	if bin != "" {
		pkg = "postgresql-" + filepath.Base(filepath.Dir(bin)) + "-pg-wait-sampling"
	}
	t.Fatalf("pg_wait_sampling is not installed for this PostgreSQL (%v): run `make extensions`, "+
		"which installs the Debian package %s (or build it from https://github.com/postgrespro/pg_wait_sampling)", err, pkg)
}

// startWaitSampling starts a pgbench cluster (scale 1) with
// pg_stat_statements created, pg_wait_sampling preloaded as well when
// preload, and created in database postgres when create.
func startWaitSampling(t *testing.T, preload, create bool) *pgcluster.Cluster {
	t.Helper()
	libs := "pg_stat_statements"
	if preload {
		libs += ",pg_wait_sampling"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := pgcluster.Start(ctx, pgcluster.Options{Settings: pgssSettings(map[string]string{"shared_preload_libraries": libs})})
	if err != nil {
		if strings.Contains(err.Error(), "pg_wait_sampling") {
			noWaitSampling(t, "", err)
		}
		t.Fatalf("pgcluster: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("pgcluster: stop: %v", err)
		}
	})
	if out, err := c.Pgbench(ctx, "-i", "-q", "-s", "1", "postgres"); err != nil {
		t.Fatalf("pgbench -i: %v\n%s", err, out)
	}
	pgclustertest.Exec(t, c, "postgres", "CREATE EXTENSION pg_stat_statements")
	if create {
		if err := c.Exec(ctx, "postgres", "CREATE EXTENSION pg_wait_sampling"); err != nil {
			noWaitSampling(t, c.BinDir(), err)
		}
	}
	return c
}

type rawKey struct {
	pid        int32
	typ, event string
	queryid    int64
}

// rawProfile reads pg_wait_sampling_profile as it is.
func rawProfile(t *testing.T, conn *pgx.Conn) map[rawKey]int64 {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT pid, coalesce(event_type, ''), coalesce(event, ''), coalesce(queryid, 0), count FROM pg_wait_sampling_profile`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[rawKey]int64{}
	var k rawKey
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&k.pid, &k.typ, &k.event, &k.queryid, &n}, func() error {
		out[k] += n
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Eight clients updating pgbench's single branch, observed with
// pg_wait_sampling: the profile comes from it, the branch update waits
// on Lock/transactionid, there are many times the samples that polling
// pg_stat_activity every 100 ms could give, and the observer's own
// backend, present in the server's profile, is not in the evidence: the
// evidence's samples are the server's profile deltas of every client
// backend but the observer's (and this test's), idle sessions left out.
func TestWaitSamplingContention(t *testing.T) {
	// Sequential: its rounds and samples are counted against the
	// wall-clock duration.
	c := startWaitSampling(t, true, true)
	ctx := context.Background()
	conn := pgclustertest.Connect(ctx, t, c.DSN("postgres"))
	defer conn.Close(ctx)
	var testPID int32
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&testPID); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE backend_type NOT IN ('client backend', 'parallel worker')")
	if err != nil {
		t.Fatal(err)
	}
	bgPIDs, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Fatal(err)
	}
	before := rawProfile(t, conn)

	o := startCollector(t, c.DSN("postgres"), Options{Interval: time.Second})
	var ownPID int32
	if err := conn.QueryRow(ctx, "SELECT pid FROM pg_stat_activity WHERE application_name = $1", ApplicationName).Scan(&ownPID); err != nil {
		t.Fatal(err)
	}
	out := pgbench(t, c, "-n", "-c", "8", "-T", "4")
	e := stop(t, o)
	after := rawProfile(t, conn)

	w := e.Waits
	if w.Source != "pg_wait_sampling" || e.Capabilities.WaitSource != "pg_wait_sampling" || !e.Capabilities.WaitSampling.Is(ExtInstalled) {
		t.Fatalf("source %q, pg_wait_sampling %q: %s", w.Source, e.Capabilities.WaitSampling, w.SourceReason)
	}
	if w.SampleIntervalMS != 10 || w.Snapshots < 5 || w.Excluded == nil || !strings.Contains(w.SourceReason, "every 10 ms") {
		t.Errorf("period %.0f ms, %d snapshots, excluded %+v, reason %q", w.SampleIntervalMS, w.Snapshots, w.Excluded, w.SourceReason)
	}
	// The server samples; the observer polls only as often as its
	// snapshots (every second here), not every 100 ms.
	if e.Sampling.SampleIntervalMS != 1000 || e.Sampling.Rounds > int64(e.DurationS)+2 {
		t.Errorf("observer polled every %.0f ms (%d rounds in %.1f s) beside pg_wait_sampling, want every 1000 ms",
			e.Sampling.SampleIntervalMS, e.Sampling.Rounds, e.DurationS)
	}

	// The branch update's waits: a lock on the transaction that updated
	// the branch before it.
	branches := fp(t, pgbenchStatements["branches"])
	var bw *QueryWaits
	for i := range w.ByQuery {
		if w.ByQuery[i].Fingerprint == branches {
			bw = &w.ByQuery[i]
		}
	}
	if bw == nil || len(bw.Events) == 0 {
		t.Fatalf("no waits of the branch update %s in %+v", branches, w.ByQuery)
	}
	if top := bw.Events[0]; top.Type != "Lock" || top.Event != "transactionid" || top.Share < 0.5 {
		t.Errorf("branch update: top wait %+v, want Lock/transactionid dominating; all %+v", top, bw.Events)
	}
	if q := e.query(branches); q == nil || q.WaitSamples != bw.Samples || q.Calls == 0 {
		t.Errorf("branch update's pg_stat_statements entry: %+v, want %d wait samples", q, bw.Samples)
	}
	for _, q := range w.ByQuery {
		if strings.Contains(q.Query, "pgrehearse-observe") || strings.Contains(q.Query, "pg_wait_sampling") {
			t.Errorf("the observer's own statement is in the wait profile: %s", q.Query)
		}
	}

	// Over time: a bucket per snapshot interval (1 s).
	ws := w.OverTime
	if ws == nil || ws.BucketMS != 1000 || len(ws.Rounds) < 4 || len(ws.Series) == 0 || len(bw.OverTime) != len(ws.Rounds) {
		t.Fatalf("over time: %+v", ws)
	}
	var rounds int64
	for _, r := range ws.Rounds {
		rounds += r
	}
	// The server's rounds: the duration over 10 ms.
	if want := int64(e.DurationS * 100); rounds != w.Rounds || rounds < want*95/100 || rounds > want*105/100 {
		t.Errorf("%d rounds (%d over time), want about %d", w.Rounds, rounds, want)
	}

	// Polling pg_stat_activity every 100 ms sees at most the 8 clients
	// in each of duration / 100 ms rounds.
	pollMax := int64(e.DurationS*10) * 8
	if w.Samples < 3*pollMax {
		t.Errorf("%d samples in %.1f s: not far above the %d that 100 ms polling could give at most", w.Samples, e.DurationS, pollMax)
	}

	// The server's own profile, less the observer's backend, this
	// test's, background processes and idle sessions, is what the
	// evidence counts.
	var want, own, ownBusy int64
	for k, n := range after {
		d := n - before[k]
		switch {
		case d <= 0:
		case k.pid == ownPID:
			own += d
			if k.typ != "Client" {
				ownBusy += d
			}
		case k.pid == testPID || slicesContains(bgPIDs, k.pid) || k.typ == "Activity" || (k.typ == "Client" && k.event == "ClientRead" && k.queryid == 0):
		default:
			want += d
		}
	}
	if own == 0 {
		t.Errorf("the observer's backend %d has no samples in the server's profile: nothing to leave out", ownPID)
	}
	got := w.Samples + w.Excluded.Unknown
	if diff := got - want; diff < -want/100-5 || diff > want/100+5 {
		t.Errorf("evidence: %d samples (+%d unknown), the server's profile of the clients: %d (the observer's own: %d, %d not in Client waits)",
			w.Samples, w.Excluded.Unknown, want, own, ownBusy)
	}
	if w.Excluded.Own != 0 || w.Excluded.Idle == 0 {
		t.Errorf("excluded %+v", w.Excluded)
	}
	if e.Sampling.WaitSamplingSnapshots != w.Snapshots || e.Sampling.WaitSamplingMeanMS <= 0 {
		t.Errorf("sampling %+v", e.Sampling)
	}
	for _, warn := range e.Warnings {
		t.Errorf("unexpected warning: %s", warn)
	}
	// How the summary and the page show the source and its period is
	// internal/report's test (TestWaitSourceShown), on these fields.
	t.Logf("pgbench %.0f TPS; %.1f s: %d samples from pg_wait_sampling in %d rounds (100 ms polling: at most %d), branch update %d: %+v; "+
		"the server's profile of the clients %d, of the observer's backend %d (%d not in Client waits); excluded %+v; %d profile reads of %.2f ms",
		pgbenchTPS(t, out), e.DurationS, w.Samples, w.Rounds, pollMax, bw.Samples, bw.Events, want, own, ownBusy, *w.Excluded,
		e.Sampling.WaitSamplingSnapshots, e.Sampling.WaitSamplingMeanMS)
}

func slicesContains(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Without pg_wait_sampling loaded, or not created in the database, the
// observer samples pg_stat_activity, and the evidence says why.
func TestWaitSamplingFallback(t *testing.T) {
	functionalCase(t)
	for _, tc := range []struct {
		name            string
		preload, create bool
		state, reason   string
	}{
		{"not preloaded", false, true, "not_preloaded", "add it to shared_preload_libraries"},
		{"not created", true, false, "not_created", "CREATE EXTENSION pg_wait_sampling"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			functionalCase(t) // each case on a server of its own
			c := startWaitSampling(t, tc.preload, tc.create)
			o := startCollector(t, c.DSN("postgres"), Options{Interval: time.Second})
			pgbench(t, c, "-n", "-c", "8", "-T", "2")
			e := stop(t, o)
			w := e.Waits
			if w.Source != "pg_stat_activity" || e.Capabilities.WaitSampling.String() != tc.state || !strings.Contains(w.SourceReason, tc.reason) {
				t.Errorf("source %q, pg_wait_sampling %q, reason %q", w.Source, e.Capabilities.WaitSampling, w.SourceReason)
			}
			notes := strings.Join(e.Notes, "\n")
			if !strings.Contains(notes, "sampled from pg_stat_activity every 100ms: "+w.SourceReason) {
				t.Errorf("notes %q", e.Notes)
			}
			if w.SampleIntervalMS != 100 || !w.CPUSampled || w.Snapshots != 0 || w.Excluded != nil || w.Rounds == 0 || w.Samples == 0 ||
				e.Sampling.WaitSamplingSnapshots != 0 {
				t.Errorf("waits %+v", w)
			}
			lock := false
			for _, ev := range w.Events {
				lock = lock || ev.Type == "Lock"
			}
			if !lock {
				t.Errorf("no Lock waits in %+v", w.Events)
			}
			// The page's waits section says so from Source and
			// SourceReason: internal/report's TestWaitSourceShown.
			t.Logf("%s: %s; %d samples in %d rounds", tc.name, w.SourceReason, w.Samples, w.Rounds)
		})
	}
}
