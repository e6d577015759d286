package proxy

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestPgbench runs pgbench through the proxy in each protocol mode: it
// succeeds, every session has one startup and one end (Terminate), and the
// proxy recorded one Query (simple) or Execute (extended, prepared) per
// transaction.
func TestPgbench(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	script := filepath.Join(t.TempDir(), "select.sql")
	if err := os.WriteFile(script, []byte("\\set aid random(1, 1000)\nSELECT :aid::int + 1;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const clients, txs = 3, 40
	// Each mode through the event loop and, with NoEventLoop, through
	// the goroutines a session on a TLS leg uses.
	for _, tc := range []struct {
		mode   string
		noLoop bool
	}{{"simple", false}, {"extended", false}, {"prepared", false}, {"simple", true}, {"prepared", true}} {
		mode := tc.mode
		name := mode
		if tc.noLoop {
			name += "/goroutines"
		}
		t.Run(name, func(t *testing.T) {
			r := startProxy(t, Config{Upstream: c.DSN("postgres"), NoEventLoop: tc.noLoop})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			// The later -h and -p win over the cluster's own; -n: no
			// vacuum; a script of our own: no scale query either, so
			// every statement is the script's.
			out, err := c.Pgbench(ctx, "-h", "127.0.0.1", "-p", strconv.Itoa(r.port), "-n",
				"-M", mode, "-c", strconv.Itoa(clients), "-t", strconv.Itoa(txs), "-f", script, "postgres")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(out, []byte("number of failed transactions: 0")) {
				t.Errorf("pgbench output:\n%s", out)
			}
			// pgbench's own connection and one per client.
			m := r.sink.waitEnds(t, clients+1)
			for id, end := range checkSessions(t, m) {
				if end != capture.EndTerminate {
					t.Errorf("session %d ended %v, want terminate", id, end)
				}
			}
			want := byte('E')
			if mode == "simple" {
				want = 'Q'
			}
			n := 0
			for _, rec := range r.sink.records() {
				if rec.Kind == capture.KindFrontend && rec.Msg[0] == want {
					n++
				}
			}
			if n != clients*txs {
				t.Errorf("%d %q messages recorded, want %d (one per transaction)", n, want, clients*txs)
			}
			st := r.p.Stats()
			if st.SessionsTotal != clients+1 || st.SessionsOpen != 0 || len(st.Errors) != 0 {
				t.Errorf("stats %+v, want %d sessions, none open, no errors", st, clients+1)
			}
		})
	}
}

// cleanEnv is the environment without libpq's variables, so that only the
// command line counts.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			env = append(env, kv)
		}
	}
	return env
}

// TestPsqlCopy sends COPY FROM STDIN with psql through the proxy: the
// rows arrive, and the capture holds the CopyData verbatim, CopyDone and
// the server's CopyInResponse and "COPY 3".
func TestPsqlCopy(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	if err := c.Exec(ctx, "postgres", "CREATE TABLE t (a int, b text)"); err != nil {
		t.Fatal(err)
	}
	r := startProxy(t, Config{Upstream: c.DSN("postgres")})
	data := "1\tone\n2\ttwo\n3\tthree\n"
	cmd := exec.CommandContext(ctx, filepath.Join(c.BinDir(), "psql"), "-X", "-v", "ON_ERROR_STOP=1",
		"-h", "127.0.0.1", "-p", strconv.Itoa(r.port), "-U", "postgres", "-d", "postgres",
		"-c", "COPY t FROM STDIN")
	cmd.Env = cleanEnv()
	cmd.Stdin = strings.NewReader(data)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	conn, err := pgconn.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	res, err := conn.Exec(ctx, "SELECT string_agg(a || ':' || b, ',' ORDER BY a) FROM t").ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res[0].Rows[0][0]); got != "1:one,2:two,3:three" {
		t.Errorf("table holds %q after COPY through the proxy", got)
	}

	m := r.sink.waitEnds(t, 1)
	checkSessions(t, m)
	var copied strings.Builder
	var done, copyIn, complete bool
	for _, rec := range r.sink.records() {
		switch {
		case rec.Kind == capture.KindFrontend && rec.Msg[0] == 'd':
			copied.Write(rec.Msg[5:])
		case rec.Kind == capture.KindFrontend && rec.Msg[0] == 'c':
			done = true
		case rec.Kind == capture.KindCopyIn:
			copyIn = true
		case rec.Kind == capture.KindComplete && rec.Tag == "COPY 3":
			complete = true
		}
	}
	if copied.String() != data || !done || !copyIn || !complete {
		t.Errorf("recorded CopyData %q (want %q), CopyDone %v, CopyInResponse %v, COPY 3 %v", copied.String(), data, done, copyIn, complete)
	}
}

// TestServeStopsOpenSessions: sessions still open when Serve stops end
// with EndOpen, and their clients see the connection close.
func TestServeStopsOpenSessions(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	r := startProxy(t, Config{Upstream: c.DSN("postgres")})
	ctx := context.Background()
	conn, err := pgconn.Connect(ctx, r.dsn("postgres", "postgres", "sslmode=disable"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT 1").ReadAll(); err != nil {
		t.Fatal(err)
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	m := r.sink.waitEnds(t, 1)
	for id, end := range checkSessions(t, m) {
		if end != capture.EndOpen {
			t.Errorf("session %d ended %v, want open", id, end)
		}
	}
	if _, err := conn.Exec(ctx, "SELECT 1").ReadAll(); err == nil {
		t.Error("a query after Serve stopped succeeded")
	}
	if n := r.p.Stats().SessionsOpen; n != 0 {
		t.Errorf("%d sessions open after Serve returned", n)
	}
}

// TestCancel cancels pg_sleep(30) through the proxy with pgconn's
// CancelRequest: the query fails with 57014 at once, and the session
// holds a KindCancel. On PostgreSQL 18 with protocol 3.2 the cancel key
// is 32 bytes, not 4: the proxy forwards it whole.
func TestCancel(t *testing.T) {
	functionalCase(t)
	for _, tc := range []struct {
		name    string
		version int
		extra   string
		keyLen  int
	}{
		{"protocol 3.0", 0, "", 4},
		{"PostgreSQL 18, protocol 3.2", 18, "max_protocol_version=3.2", 32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := pgclustertest.StartT(t, pgcluster.Options{Version: tc.version})
			testCancel(t, c, tc.extra, tc.keyLen)
		})
	}
}

func testCancel(t *testing.T, c *pgcluster.Cluster, extra string, keyLen int) {
	r := startProxy(t, Config{Upstream: c.DSN("postgres")})
	ctx := context.Background()
	conn, err := pgconn.Connect(ctx, r.dsn("postgres", "postgres", "sslmode=disable "+extra))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if n := len(conn.SecretKey()); n != keyLen {
		t.Fatalf("cancel key of %d bytes through the proxy, want %d", n, keyLen)
	}
	start := time.Now()
	errc := make(chan error, 1)
	go func() {
		_, err := conn.ExecParams(ctx, "SELECT pg_sleep(30)", nil, nil, nil, nil).Close()
		errc <- err
	}()
	direct, err := pgconn.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close(ctx)
	poll(t, "pg_sleep is running", func() bool {
		res, err := direct.Exec(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = "+
			strconv.Itoa(int(conn.PID()))+" AND state = 'active'").ReadAll()
		return err == nil && string(res[0].Rows[0][0]) == "1"
	})
	if err := conn.CancelRequest(ctx); err != nil {
		t.Fatal(err)
	}
	err = <-errc
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "57014" {
		t.Fatalf("pg_sleep ended with %v, want 57014 (query_canceled)", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the cancel took %v", d)
	}
	conn.Close(ctx)
	m := r.sink.waitEnds(t, 1)
	checkSessions(t, m)
	var cancels, startups int
	for _, rec := range r.sink.records() {
		switch rec.Kind {
		case capture.KindCancel:
			cancels++
		case capture.KindStartup:
			startups++
			if rec.BackendPID != conn.PID() {
				t.Errorf("startup records backend pid %d, want %d", rec.BackendPID, conn.PID())
			}
		}
	}
	if cancels != 1 || startups != 1 {
		t.Errorf("%d cancels in %d sessions, want 1 in 1", cancels, startups)
	}
	if st := r.p.Stats(); st.Cancels != 1 {
		t.Errorf("stats count %d cancels, want 1", st.Cancels)
	}
}
