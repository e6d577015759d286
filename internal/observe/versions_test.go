package observe

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// startPgbenchVersion is startPgbench on PostgreSQL major from the
// version cache.
func startPgbenchVersion(t *testing.T, major int, settings map[string]string) *pgcluster.Cluster {
	t.Helper()
	return initPgbench(t, pgclustertest.StartVersion(t, major, settings))
}

// holdStarting opens a connection to c that stops in authentication: the
// role must give a password (SCRAM through TCP) and none is sent. From
// PostgreSQL 18, pg_stat_activity shows such a backend as a client
// backend in state "starting", with no database yet (datid null), as it
// shows every connection for a moment while it logs in. holdStarting
// returns once the backend is there, on 18; on older versions it only
// holds the connection, which they do not show.
func holdStarting(t *testing.T, c *pgcluster.Cluster) {
	t.Helper()
	ctx := context.Background()
	hba := filepath.Join(c.DataDir(), "pg_hba.conf")
	old, err := os.ReadFile(hba)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hba, append([]byte("host all slowpoke 127.0.0.1/32 scram-sha-256\n"), old...), 0o600); err != nil {
		t.Fatal(err)
	}
	pgclustertest.Exec(t, c, "postgres", "CREATE ROLE slowpoke LOGIN PASSWORD 'secret'; SELECT pg_reload_conf()")
	conn := pgclustertest.Connect(ctx, t, c.DSN("postgres"))
	defer conn.Close(ctx)
	// pg_reload_conf only signals: wait until the postmaster read the
	// new pg_hba.conf.
	waitForOne(ctx, t, conn, "SELECT count(*) FROM pg_hba_file_rules WHERE 'slowpoke' = ANY(user_name)", "pg_hba.conf's new line never showed")
	nc, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(c.Port()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	fe := pgproto3.NewFrontend(nc, nc)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber,
		Parameters: map[string]string{"user": "slowpoke", "database": "postgres"}})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	if m, err := fe.Receive(); err != nil {
		t.Fatal(err)
	} else if _, ok := m.(*pgproto3.AuthenticationSASL); !ok {
		t.Fatalf("the server answered %T, not a request for the password", m)
	}
	var version int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version < 180000 {
		return
	}
	waitForOne(ctx, t, conn, `SELECT count(*) FROM pg_stat_activity
			WHERE backend_type = 'client backend' AND datid IS NULL AND state = 'starting'`, "the connection in authentication never showed in pg_stat_activity")
}

// TestVersionsObserve18StartingBackend: on PostgreSQL 18 a connection still
// logging in is a client backend without a database. The activity
// sample read its datid into a uint32 and failed on every round while
// one was there: "observe: pg_stat_activity: can't scan into dest[0]
// (col: datid): cannot scan NULL into *uint32", losing the wait events of
// a rehearsal's rounds. It is a connection, not an active one.
func TestVersionsObserve18StartingBackend(t *testing.T) {
	functionalCase(t)
	c := startPgbenchVersion(t, 18, pgssSettings(nil))
	holdStarting(t, c)
	o, w := startWaitable(t, c.DSN("postgres"), Options{Interval: 200 * time.Millisecond, SampleInterval: 10 * time.Millisecond})
	// Three rounds, or an error (seen from the round after it), which
	// Stop then returns.
	w.wait(t, "three activity samples", func(o *Collector) bool { return o.stats.rounds >= 3 || len(o.errs) > 0 })
	stop(t, o) // fails t on the evidence's error

	// The sweep's wait sampler reads the same query.
	conn, err := pgx.Connect(context.Background(), c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	ws, err := StartWaitSampler(context.Background(), conn, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, rounds, err := ws.Stop(); err != nil || rounds < 1 {
		t.Errorf("wait sampler: %d rounds, %v", rounds, err)
	}
}

// TestVersionsObserve observes a short pgbench run on each major of
// pgcluster.Majors, and on 13 and 18 with pg_stat_statements created at
// 1.7, as pg_upgrade leaves an extension from 12: every statement's calls
// are exactly pgbench's, wait events are sampled, and the evidence has no
// error. The long suite (PGREHEARSE_VERSIONS=all) runs both protocols.
func TestVersionsObserve(t *testing.T) {
	functionalCase(t)
	type tc struct {
		major      int
		extversion string
	}
	var cases []tc
	for _, m := range pgcluster.Majors {
		cases = append(cases, tc{m, ""})
	}
	cases = append(cases, tc{13, "1.7"}, tc{18, "1.7"})
	modes := []string{"prepared"}
	if pgclustertest.LongVersions() {
		modes = append(modes, "simple", "extended")
	}
	for _, tc := range cases {
		name := strconv.Itoa(tc.major)
		if tc.extversion != "" {
			name += "/pgss-" + tc.extversion
		}
		t.Run(name, func(t *testing.T) {
			functionalCase(t) // each case on a server of its own
			c := pgclustertest.StartVersion(t, tc.major, pgssSettings(nil))
			ctx := context.Background()
			if out, err := c.Pgbench(ctx, "-i", "-q", "-s", "1", "postgres"); err != nil {
				t.Fatalf("pgbench -i: %v\n%s", err, out)
			}
			create := "CREATE EXTENSION pg_stat_statements"
			if tc.extversion != "" {
				create += " VERSION '" + tc.extversion + "'"
			}
			pgclustertest.Exec(t, c, "postgres", create)
			for _, mode := range modes {
				pgclustertest.Exec(t, c, "postgres", "SELECT pg_stat_statements_reset()")
				o := startCollector(t, c.DSN("postgres"), Options{Interval: 300 * time.Millisecond, SampleInterval: 10 * time.Millisecond})
				const clients, perClient = 2, 100
				pgbench(t, c, "-n", "-M", mode, "-c", strconv.Itoa(clients), "-t", strconv.Itoa(perClient))
				e := stop(t, o)
				for name, sql := range pgbenchStatements {
					q := e.query(fp(t, sql))
					if q == nil {
						t.Errorf("%s %s: not in the evidence", mode, name)
						continue
					}
					if q.Calls != clients*perClient || q.TotalExecMS <= 0 {
						t.Errorf("%s %s: %d calls in %.3f ms, want %d", mode, name, q.Calls, q.TotalExecMS, clients*perClient)
					}
				}
				// Every version gives the tables' update counters
				// and their indexes (tables.go).
				tellers := -1
				for i, tu := range e.Tables {
					if tu.Name == "pgbench_tellers" {
						tellers = i
					}
				}
				if tellers < 0 || e.Tables[tellers].Updates != clients*perClient || len(e.Tables[tellers].Indexes) != 1 ||
					!slices.Equal(e.Tables[tellers].Indexes[0].Columns, []string{"tid"}) {
					t.Errorf("%s: tables %+v, warnings %v", mode, e.Tables, e.Warnings)
				}
				// Whether a 10 ms poll catches a short transaction
				// active is chance: the rounds are not.
				if e.Waits.Source != WaitsFromActivity || e.Waits.Rounds == 0 {
					t.Errorf("%s: waits from %s in %d rounds, want pg_stat_activity's", mode, e.Waits.Source, e.Waits.Rounds)
				}
			}
		})
	}
}
