package proxy

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/capture"
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
		conn, err := pgconn.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
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
