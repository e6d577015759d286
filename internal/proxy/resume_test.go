package proxy

import (
	"context"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestAttachResumes: with ResumeSessions, Attach takes up an idle
// session at once, with its state; one inside a transaction at its next
// idle point, counting the messages it sent before; and leaves out,
// with why, one whose state outgrew its bounds, one that ended inside
// its transaction and one still inside it when the sink is detached.
func TestAttachResumes(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	r := startProxy(t, Config{Upstream: c.DSN("postgres"), ResumeSessions: true, StateItems: 2})
	r.p.Detach()
	ctx := context.Background()
	dsn := r.dsn("postgres", "postgres", "sslmode=disable")
	open := func(sqls ...string) *pgconn.PgConn {
		t.Helper()
		conn := pgclustertest.PgConn(ctx, t, dsn)
		t.Cleanup(func() { conn.Close(context.Background()) })
		for _, sql := range sqls {
			if _, err := conn.Exec(ctx, sql).ReadAll(); err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
		}
		return conn
	}
	idle := open("SET app.tenant = 'a'", "SET app.tenant = 'b'")
	crowded := open("PREPARE p1 AS SELECT 1", "PREPARE p2 AS SELECT 2", "PREPARE p3 AS SELECT 3")
	late := open("BEGIN", "SET app.tenant = 'c'")
	ends := open("BEGIN")
	never := open("BEGIN")

	sink := &memSink{}
	notRecorded, err := r.p.Attach(sink)
	if err != nil {
		t.Fatal(err)
	}
	rc := r.p.Resumes()
	if notRecorded != 1 || rc.Resumed != 1 || rc.Waiting != 3 || rc.NotRecorded[NotResumedTooLarge] != 1 ||
		!strings.Contains(rc.Reason, "more than 2 prepared statements and settings") {
		t.Errorf("attached: %d not recorded, %+v: want the idle session taken up, 3 waiting, the crowded one left out with why", notRecorded, rc)
	}
	for _, sql := range []string{"SELECT 'in the transaction'", "COMMIT", "SELECT 'after it'"} {
		if _, err := late.Exec(ctx, sql).ReadAll(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := idle.Exec(ctx, "SELECT current_setting('app.tenant')").ReadAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := crowded.Exec(ctx, "SELECT 'not recorded'").ReadAll(); err != nil {
		t.Fatal(err)
	}
	ends.Close(ctx)
	for deadline := time.Now().Add(10 * time.Second); r.p.Resumes().NotRecorded[NotResumedEnded] == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the session that ended in its transaction is still counted as waiting: %+v", r.p.Resumes())
		}
	}
	r.p.Detach()
	rc = r.p.Resumes()
	if rc.Resumed != 2 || rc.Late != 1 || rc.Waiting != 0 || rc.Skipped[capture.ResumeInTransaction] != 2 ||
		rc.NotRecorded[NotResumedEnded] != 1 || rc.NotRecorded[NotResumedNeverIdle] != 1 {
		t.Errorf("detached: %+v: want 2 taken up (1 late after 2 messages), 1 ended and 1 never idle", rc)
	}
	if _, err := never.Exec(ctx, "COMMIT").ReadAll(); err != nil {
		t.Errorf("the session left out: %v", err)
	}

	var starts []capture.Record
	queries := map[uint64][]string{}
	for _, rec := range sink.records() {
		switch {
		case rec.Kind == capture.KindStartup:
			starts = append(starts, rec)
		case rec.Kind == capture.KindFrontend && rec.Msg[0] == 'Q':
			queries[rec.Session] = append(queries[rec.Session], cstring(rec.Msg[5:]))
		}
	}
	if len(starts) != 2 {
		t.Fatalf("%d startups recorded, want the idle session's and the late one's", len(starts))
	}
	var states [][]string
	for _, s := range starts {
		rs := s.Resume
		if rs == nil {
			t.Fatalf("startup %+v without its state", s)
		}
		// Taken up from the middle, the startup is the one the session
		// would have had from its start (session.startupRecord).
		if user := slices.IndexFunc(s.Params, func(p capture.Param) bool { return p.Name == "user" && p.Value == "postgres" }); user < 0 ||
			s.ProtocolMajor != 3 || s.BackendPID == 0 || s.ClientAddr == "" {
			t.Errorf("startup taken up from the middle %+v: want the client's parameters, protocol 3, its backend and address", s)
		}
		var sqls []string
		for _, it := range rs.State {
			sqls = append(sqls, it.SQL)
		}
		states = append(states, sqls)
		if got, want := queries[s.Session], map[bool][]string{false: {"SELECT current_setting('app.tenant')"}, true: {"SELECT 'after it'"}}[rs.Skipped > 0]; !slices.Equal(got, want) {
			t.Errorf("session %d recorded %q, want %q", s.Session, got, want)
		}
	}
	if !slices.Equal(states[0], []string{"SET app.tenant = 'b'"}) || !slices.Equal(states[1], []string{"SET app.tenant = 'c'"}) ||
		starts[1].Resume.Skipped != 2 || starts[1].Resume.SkipReason != capture.ResumeInTransaction {
		t.Errorf("states %q, late %+v: want each session's last setting, the late one's 2 messages skipped in its transaction", states, starts[1].Resume)
	}
}

// recordSlice yields records to a capture.Decoder.
type recordSlice []capture.Record

func (s *recordSlice) Next() (*capture.Record, error) {
	if len(*s) == 0 {
		return nil, io.EOF
	}
	r := &(*s)[0]
	*s = (*s)[1:]
	return r, nil
}

// TestResumeUnderTraffic: recordings attached and detached while
// sessions that started before them run queries, transactions and
// pipelined extended batches without a pause. Every recording takes
// each of them up at an idle point: decoded, its records make whole
// statements, each with its answer, and none is skipped as an answer
// without its request or a statement the capture does not hold.
func TestResumeUnderTraffic(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	r := startProxy(t, Config{Upstream: c.DSN("postgres"), ResumeSessions: true})
	r.p.Detach()
	ctx := context.Background()
	dsn := r.dsn("postgres", "postgres", "sslmode=disable")

	const busy = 4
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, busy)
	for k := range busy {
		conn := pgclustertest.PgConn(ctx, t, dsn)
		defer conn.Close(ctx)
		if _, err := conn.Prepare(ctx, "s", "SELECT $1::int + 1", nil); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				var err error
				switch (i + k) % 3 {
				case 0:
					_, err = conn.Exec(ctx, "SELECT "+strconv.Itoa(i)).ReadAll()
				case 1:
					for _, sql := range []string{"BEGIN", "SELECT 1", "COMMIT"} {
						if _, err = conn.Exec(ctx, sql).ReadAll(); err != nil {
							break
						}
					}
				default:
					b := &pgconn.Batch{}
					b.ExecPrepared("s", [][]byte{[]byte(strconv.Itoa(i))}, nil, nil)
					b.ExecParams("SELECT 2", nil, nil, nil, nil)
					_, err = conn.ExecBatch(ctx, b).ReadAll()
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for round := range 5 {
		sink := &memSink{}
		if _, err := r.p.Attach(sink); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); r.p.Resumes().Resumed < busy; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %+v: the busy sessions were not all taken up", round, r.p.Resumes())
			}
		}
		// Traffic while recording: some hundred records.
		for deadline := time.Now().Add(10 * time.Second); len(sink.records()) < 200; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d records in 10 s", round, len(sink.records()))
			}
		}
		r.p.Detach()
		recs := recordSlice(sink.records())
		d := capture.NewDecoder(&recs)
		statements := 0
		for ev, err := range event.All(d) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.IsExecution() {
				statements++
			}
		}
		counts := d.Counts()
		if len(counts.Skipped) != 0 || counts.ResumedSessions != busy || statements == 0 {
			t.Errorf("round %d: %d statements, counts %+v: want every record used, %d sessions taken up", round, statements, counts, busy)
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a session open before the recordings: %v", err)
	}
}
