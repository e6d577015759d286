package cli

import (
	"context"
	"errors"
	"net"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestVersionsCaptureProxy runs the capture proxy in front of each major:
// pgx in the extended protocol, and a raw pgproto3 client that asks for
// protocol 3.2 (which 18 grants with a 32-byte cancel key, and which 13
// to 17 answer with NegotiateProtocolVersion for 3.0 and a 4-byte key)
// and cancels its own query through the proxy with the key it was
// given; it pipelines a Query, an extended batch and a Query before the
// first answer. The capture is replayed onto a fresh server of the same major:
// nothing fails only on the target, every answer is the one the original
// gave, and pg_stat_statements calls per query equal the original's.
func TestVersionsCaptureProxy(t *testing.T) {
	parallelCase(t)
	pgss := map[string]string{"shared_preload_libraries": "pg_stat_statements"}
	for _, major := range versionsFor(18) {
		t.Run(strconv.Itoa(major), func(t *testing.T) {
			ctx := context.Background()
			a, b := pgclustertest.StartVersion(t, major, pgss), pgclustertest.StartVersion(t, major, pgss)
			for _, c := range []*pgcluster.Cluster{a, b} {
				mustExec(t, c, "postgres", "CREATE EXTENSION pg_stat_statements; SELECT pg_stat_statements_reset()")
			}
			rc := startCapture(t, a.DSN("postgres"))
			conn := pgclustertest.Connect(ctx, t, rc.dsn(a.User(), "postgres"))
			if _, err := conn.Exec(ctx, "CREATE TABLE items (id int PRIMARY KEY, name text)"); err != nil {
				t.Fatal(err)
			}
			for i := int32(1); i <= 20; i++ {
				if _, err := conn.Exec(ctx, "INSERT INTO items VALUES ($1, $2)", i, "item "+strconv.Itoa(int(i))); err != nil {
					t.Fatal(err)
				}
			}
			conn.Close(ctx)
			rawProtocol32(t, a, rc, major)

			code, out := rc.stop(t)
			if code != ExitOK || !strings.Contains(out, ": complete") {
				t.Fatalf("capture exited %d, want a complete capture:\n%s", code, out)
			}
			original := pgssCalls(ctx, t, a)
			mustExec(t, b, "postgres", "SELECT pg_stat_statements_reset()")
			code, text, res := runReplay(t, "--target", b.DSN("postgres"), "--speed", "0", "--findings=false", rc.dir)
			if code != ExitOK || res == nil {
				t.Fatalf("replay exited %d:\n%s", code, text)
			}
			if o := res.Outcomes; o.FailedOnlyOnTarget != 0 || o.AnswerDiffers != 0 || o.BothFailed != 1 || o.Answered < res.Statements.Total || res.Statements.Total < 25 {
				t.Errorf("statements %+v, outcomes %+v: want every statement run and answered as on the original (the canceled sleep failing on both)\n%s", res.Statements, o, text)
			}
			replayed := pgssCalls(ctx, t, b)
			// The reset, the count and the wait for pg_sleep are the
			// test's (the replay's pre-flight sends the empty query,
			// which pg_stat_statements does not count). Only the
			// original's queries are compared: the replay observes the
			// target with queries of its own.
			excluded := fingerprintSet("SELECT pg_stat_statements_reset()", pgssQuery, sleepingQuery+"1")
			var diffs []string
			for fp, n := range original {
				if !excluded[fp] && replayed[fp].calls != n.calls {
					diffs = append(diffs, fmtDiff(fp, n.calls, replayed[fp].calls, n.query))
				}
			}
			sort.Strings(diffs)
			for _, d := range diffs {
				t.Error(d)
			}
			const state = "SELECT string_agg(id || ':' || name, ',' ORDER BY id) FROM items"
			if got, want := queryLines(t, b, "postgres", state), queryLines(t, a, "postgres", state); len(got) != 1 || got[0] != want[0] {
				t.Errorf("items on the replay's target %q, want the original's %q", got, want)
			}
		})
	}
}

// rawProtocol32 is a client of its own on pgproto3, through the proxy:
// it asks for protocol 3.2, checks what the server granted (3.2 with a
// 32-byte key from 18; NegotiateProtocolVersion for 3.0 and a 4-byte key
// before), pipelines a query in the simple protocol, one in the extended
// and a SET, and cancels a pg_sleep with a CancelRequest carrying the key whole.
// The sleep's session has a 2 s statement_timeout, so that the replay,
// which does not send cancels, fails it with the same SQLSTATE.
func rawProtocol32(t *testing.T, a *pgcluster.Cluster, rc *runningCapture, major int) {
	t.Helper()
	addr := net.JoinHostPort(rc.host, rc.port)
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(2 * time.Minute))
	fe := pgproto3.NewFrontend(nc, nc)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion32,
		Parameters: map[string]string{"user": a.User(), "database": "postgres", "application_name": "raw32"}})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	var (
		negotiated *pgproto3.NegotiateProtocolVersion
		key        *pgproto3.BackendKeyData
	)
	rawUntilReady(t, fe, func(m pgproto3.BackendMessage) {
		switch m := m.(type) {
		case *pgproto3.NegotiateProtocolVersion:
			negotiated = &pgproto3.NegotiateProtocolVersion{NewestMinorProtocol: m.NewestMinorProtocol}
		case *pgproto3.BackendKeyData:
			key = &pgproto3.BackendKeyData{ProcessID: m.ProcessID, SecretKey: append([]byte(nil), m.SecretKey...)}
		}
	})
	wantKey := 4
	if major >= 18 {
		wantKey = 32
		if negotiated != nil {
			t.Errorf("PostgreSQL %d negotiated protocol %#x down from 3.2", major, negotiated.NewestMinorProtocol)
		}
	} else if negotiated == nil || negotiated.NewestMinorProtocol != pgproto3.ProtocolVersion30 {
		t.Errorf("PostgreSQL %d: NegotiateProtocolVersion %+v, want one for 3.0", major, negotiated)
	}
	if key == nil || len(key.SecretKey) != wantKey {
		t.Fatalf("BackendKeyData %+v through the proxy, want a %d-byte key", key, wantKey)
	}

	// Pipelined, as one write: a Query, an extended batch and a Query
	// before the first answer. The server answers them in turn, and the
	// capture must pair each with its own (the SET must not take the
	// UPDATE's row count).
	fe.Send(&pgproto3.Query{String: "SELECT count(*) FROM items"})
	fe.Send(&pgproto3.Parse{Name: "rename", Query: "UPDATE items SET name = $1 WHERE id = $2"})
	fe.Send(&pgproto3.Bind{PreparedStatement: "rename", Parameters: [][]byte{[]byte("renamed"), []byte("7")}})
	fe.Send(&pgproto3.Execute{})
	fe.Send(&pgproto3.Sync{})
	fe.Send(&pgproto3.Query{String: "SET statement_timeout = '2s'"})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	var tags []string
	for range 3 {
		rawUntilReady(t, fe, func(m pgproto3.BackendMessage) {
			switch m := m.(type) {
			case *pgproto3.CommandComplete:
				tags = append(tags, string(m.CommandTag))
			case *pgproto3.ErrorResponse:
				t.Errorf("%s: %s", m.Code, m.Message)
			}
		})
	}
	if got := strings.Join(tags, ","); got != "SELECT 1,UPDATE 1,SET" {
		t.Errorf("command tags %s, want SELECT 1,UPDATE 1,SET", got)
	}

	fe.Send(&pgproto3.Query{String: "SELECT pg_sleep(5)"})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	pollActivity(t, a, sleepingQuery+strconv.Itoa(int(key.ProcessID)),
		time.Minute, func(n int) bool { return n == 1 })
	cancel, err := (&pgproto3.CancelRequest{ProcessID: key.ProcessID, SecretKey: key.SecretKey}).Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cc.Write(cancel); err != nil {
		t.Fatal(err)
	}
	cc.Close()
	var canceled *pgproto3.ErrorResponse
	rawUntilReady(t, fe, func(m pgproto3.BackendMessage) {
		if e, ok := m.(*pgproto3.ErrorResponse); ok {
			canceled = &pgproto3.ErrorResponse{Code: e.Code, Message: e.Message}
		}
	})
	// "due to user request": the cancel, not the statement timeout.
	if canceled == nil || canceled.Code != "57014" || !strings.Contains(canceled.Message, "user request") {
		t.Errorf("pg_sleep ended with %+v, want 57014 canceling due to user request", canceled)
	}
	fe.Send(&pgproto3.Terminate{})
	fe.Flush()
}

// sleepingQuery, followed by a process id, counts whether that backend
// is running a statement.
const sleepingQuery = "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND pid = "

// rawUntilReady hands each backend message to see until ReadyForQuery,
// failing t if the connection ends or stays silent first.
func rawUntilReady(t *testing.T, fe *pgproto3.Frontend, see func(pgproto3.BackendMessage)) {
	t.Helper()
	for {
		m, err := fe.Receive()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("no ReadyForQuery within the deadline: %v", err)
			}
			t.Fatalf("receive: %v", err)
		}
		see(m)
		if _, ok := m.(*pgproto3.ReadyForQuery); ok {
			return
		}
	}
}
