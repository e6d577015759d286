package capturerun

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

// connect opens a connection through the proxy.
func connect(t *testing.T, s *started) *pgconn.PgConn {
	t.Helper()
	conn := pgclustertest.PgConn(context.Background(), t, s.dsn())
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func exec(t *testing.T, conn *pgconn.PgConn, sql string) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql).ReadAll(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// backendPID asks the server which backend serves conn.
func backendPID(t *testing.T, conn *pgconn.PgConn) string {
	t.Helper()
	res, err := conn.Exec(context.Background(), "SELECT pg_backend_pid()").ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return string(res[0].Rows[0][0])
}

// statements reads a capture as every command does (package source) and
// returns the statements it holds, sorted.
func statements(t *testing.T, dir string) []string {
	t.Helper()
	return queries(t, dir, event.Statement)
}

// calls is statements with the executions of the extended protocol:
// every call a client made, by its query, sorted.
func calls(t *testing.T, dir string) []string {
	t.Helper()
	return queries(t, dir, event.Statement, event.Execute)
}

func queries(t *testing.T, dir string, kinds ...event.Kind) []string {
	t.Helper()
	set, err := source.Open([]string{dir}, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	var out []string
	for _, src := range set.Sources() {
		for e, err := range event.All(src) {
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(kinds, e.Kind) {
				out = append(out, e.Query)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestRecordingsOnDemand is item 1's acceptance: a pool connected through
// a proxy that records nothing keeps its connections (the same backends)
// while two recordings start and stop through the admin interface; each
// capture is complete and holds exactly the statements its window saw:
// those of the sessions that started in it, and those of the sessions
// open at its start, idle, which it takes up from the middle (item 2);
// a second start is refused with 409 and the running id. With a
// monitoring connection, each recording records its own starting point
// (docs/capture-admin.md says so).
func TestRecordingsOnDemand(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	s := start(t, Config{Upstream: c.DSN("postgres"), Admin: "127.0.0.1:0", MonitorDSN: c.DSN("postgres")})
	if s.admin == "" {
		t.Fatal("no admin interface")
	}
	ctx := context.Background()
	cl := &Client{Addr: s.admin}

	pool := []*pgconn.PgConn{connect(t, s), connect(t, s), connect(t, s)}
	var pids []string
	for _, conn := range pool {
		pids = append(pids, backendPID(t, conn))
		exec(t, conn, "SELECT 'before any recording'")
	}

	dir1, dir2 := filepath.Join(t.TempDir(), "one"), filepath.Join(t.TempDir(), "two")
	st, err := cl.Start(ctx, StartRequest{Out: dir1})
	if err != nil {
		t.Fatal(err)
	}
	if st.ID != "r1" || st.State != StateRecording || st.NotRecorded != 0 || st.Resumed != 3 {
		t.Errorf("started %+v: want r1 recording, the pool's 3 idle sessions taken up from the middle", st)
	}
	for _, conn := range pool {
		exec(t, conn, "SELECT 'pool during one'")
	}
	w1 := connect(t, s)
	exec(t, w1, "SELECT 'window one a'")
	held := connect(t, s) // open across the stop
	exec(t, held, "SELECT 'window one held'")
	exec(t, w1, "SELECT 'window one b'")
	if err := w1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var l List
	// The proxy sees w1 go after the client did.
	poll(t, "w1's end relayed", func() bool {
		if l, err = cl.List(ctx); err != nil {
			t.Fatal(err)
		}
		return l.SessionsOpen == 4
	})
	if l.Current != "r1" || len(l.Recordings) != 1 || l.Recordings[0].State != StateRecording {
		t.Errorf("listed %+v: want r1 under way, with its sessions counted", l)
	}
	st, err = cl.Stop(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != StateFinalized || !st.Complete || st.StopReason != StopRequested || st.Sessions != 5 || st.OpenAtEnd != 4 || st.Resumed != 3 {
		t.Errorf("stopped %+v: want r1 finalized complete on request, 5 sessions (3 taken up), the held one and the pool open", st)
	}

	exec(t, held, "SELECT 'between the windows'")
	between := connect(t, s)
	exec(t, between, "SELECT 'between the windows, new session'")

	st, err = cl.Start(ctx, StartRequest{Out: dir2, Duration: "1h", MaxSize: "1GB"})
	if err != nil {
		t.Fatal(err)
	}
	if st.ID != "r2" || st.NotRecorded != 0 || st.Resumed != 5 || st.Duration != "1h0m0s" || st.MaxSize != 1e9 {
		t.Errorf("started %+v: want r2 with its limits, the pool, the held and the between sessions (5) taken up", st)
	}
	// One recording at a time: the running one's id in a 409.
	_, err = cl.Start(ctx, StartRequest{Out: filepath.Join(t.TempDir(), "three")})
	var ae *AdminError
	if !errors.As(err, &ae) || ae.Code != http.StatusConflict || ae.ID != "r2" || !errors.Is(err, ErrBusy) {
		t.Errorf("second start: %v, want a 409 naming r2", err)
	}
	w2 := connect(t, s)
	exec(t, w2, "SELECT 'window two'")
	exec(t, held, "SELECT 'held during two'")
	for _, conn := range pool {
		exec(t, conn, "SELECT 'pool during two'")
	}
	if _, err := cl.Stop(ctx, "r9"); !errors.Is(err, ErrUnknownRecording) {
		t.Errorf("stop of an unknown id: %v, want a 404", err)
	}
	st, err = cl.Stop(ctx, "r2")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Complete || st.Sessions != 6 || st.OpenAtEnd != 6 {
		t.Errorf("stopped %+v: want r2 complete, 6 sessions (5 taken up), open at the end", st)
	}
	// A stop of a finalized recording changes nothing.
	if again, err := cl.Stop(ctx, "r2"); err != nil || again.Stopped == nil || !again.Stopped.Equal(*st.Stopped) {
		t.Errorf("second stop: %+v, %v: want r2 as it was", again, err)
	}

	// No connection dropped: every one answers, from the same backend.
	for i, conn := range pool {
		if got := backendPID(t, conn); got != pids[i] {
			t.Errorf("pool connection %d: backend %s, was %s", i, got, pids[i])
		}
	}
	exec(t, held, "SELECT 'after'")
	exec(t, w2, "SELECT 'after'")

	startsUnderIdlePool(t, s, append(pool, held, between, w2))

	if got, want := statements(t, dir1), []string{"SELECT 'pool during one'", "SELECT 'pool during one'", "SELECT 'pool during one'",
		"SELECT 'window one a'", "SELECT 'window one b'", "SELECT 'window one held'"}; !slices.Equal(got, want) {
		t.Errorf("the first capture holds %q, want %q", got, want)
	}
	if got, want := statements(t, dir2), []string{"SELECT 'held during two'", "SELECT 'pool during two'", "SELECT 'pool during two'", "SELECT 'pool during two'",
		"SELECT 'window two'"}; !slices.Equal(got, want) {
		t.Errorf("the second capture holds %q, want %q", got, want)
	}
	var began []time.Time
	for _, dir := range []string{dir1, dir2} {
		m, err := capture.ReadManifest(dir)
		if err != nil || !m.Complete {
			t.Errorf("%s: manifest %+v, %v: want complete", dir, m, err)
		}
		if m.StartState == nil || m.StartState.LSN == "" {
			t.Errorf("%s: no starting point recorded through the monitoring connection: %+v", dir, m.StartState)
			continue
		}
		began = append(began, m.StartState.Time)
	}
	// Each recording's own, read at its start: r2's after r1 stopped.
	if len(began) == 2 && !began[1].After(began[0]) {
		t.Errorf("the recordings' starting points were read at %v and %v: want r2's after r1's", began[0], began[1])
	}
	s.cancel()
	r := <-s.done
	if r.err != nil || len(r.sum.Recordings) != 2+idleStarts || r.sum.Dir != "" {
		t.Errorf("Run: %v, %d recordings, dir %q: want all %d recordings, no --out capture", r.err, len(r.sum.Recordings), r.sum.Dir, 2+idleStarts)
	}
}

// idleStarts is how many recordings startsUnderIdlePool starts.
const idleStarts = 3

// startsUnderIdlePool is issue 59 item 5's acceptance: recordings
// started under a pool whose connections are all idle (one statement
// prepared before) hold every call the pool sends once the start has
// answered, the first one of each connection included: each connection
// is taken up at the start, none waits for an idle point, and no message
// is skipped as in flight. Several starts, the connections sending at
// once, so that a race between the start and the first message shows.
func startsUnderIdlePool(t *testing.T, s *started, conns []*pgconn.PgConn) {
	t.Helper()
	ctx := context.Background()
	cl := &Client{Addr: s.admin}
	const lookup = "SELECT $1::int + 1"
	for i, conn := range conns {
		if _, err := conn.Prepare(ctx, "lookup", lookup, nil); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			// A Flush after the request's Sync, as libpq's pipeline
			// mode (psycopg 3) sends: nothing left to answer, the
			// session is idle still.
			conn.Frontend().Send(&pgproto3.Flush{})
			if err := conn.Frontend().Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for round := range idleStarts {
		dir := filepath.Join(t.TempDir(), "idle")
		st, err := cl.Start(ctx, StartRequest{Out: dir})
		if err != nil {
			t.Fatal(err)
		}
		if st.Resumed != int64(len(conns)) || st.Waiting != 0 || st.NotRecorded != 0 {
			t.Errorf("round %d: started %+v: want the %d idle sessions taken up at once", round, st, len(conns))
		}
		// Each connection: the prepared lookup twice, then one with an
		// unnamed statement, all at once across the connections.
		errs := make(chan error, len(conns))
		for _, conn := range conns {
			go func() {
				for _, arg := range []string{"1", "2"} {
					if _, err := conn.ExecPrepared(ctx, "lookup", [][]byte{[]byte(arg)}, nil, nil).Close(); err != nil {
						errs <- err
						return
					}
				}
				_, err := conn.ExecParams(ctx, lookup, [][]byte{[]byte("3")}, nil, nil, nil).Close()
				errs <- err
			}()
		}
		for range conns {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		st, err = cl.Stop(ctx, st.ID)
		if err != nil {
			t.Fatal(err)
		}
		if st.Resumed != int64(len(conns)) || st.ResumedLate != 0 || st.Waiting != 0 || len(st.SkippedBeforeRecording) != 0 || st.NotRecorded != 0 || !st.Complete {
			t.Errorf("round %d: stopped %+v: want %d sessions taken up at the start, none late, no message skipped", round, st, len(conns))
		}
		got := calls(t, dir)
		if want := slices.Repeat([]string{lookup}, 3*len(conns)); !slices.Equal(got, want) {
			t.Errorf("round %d: the recording holds %d calls %q, want the %d sent after the start answered", round, len(got), got, len(want))
		}
	}
}

// TestAdminToken: the admin interface refuses to listen beyond loopback
// without a token, and with one refuses every request that lacks it.
func TestAdminToken(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	_, err := Run(context.Background(), Config{Listen: "127.0.0.1:0", Upstream: c.DSN("postgres"), Admin: "0.0.0.0:0"})
	if !errors.Is(err, ErrAdminToken) {
		t.Fatalf("admin on 0.0.0.0 without a token: %v, want ErrAdminToken", err)
	}
	s := start(t, Config{Upstream: c.DSN("postgres"), Admin: "0.0.0.0:0", AdminToken: "s3cret"})
	_, port, _ := net.SplitHostPort(s.admin)
	addr := net.JoinHostPort("127.0.0.1", port)
	ctx := context.Background()
	for _, tok := range []string{"", "wrong"} {
		_, err := (&Client{Addr: addr, Token: tok}).List(ctx)
		var ae *AdminError
		if !errors.As(err, &ae) || ae.Code != http.StatusUnauthorized {
			t.Errorf("token %q: %v, want 401", tok, err)
		}
	}
	dir := filepath.Join(t.TempDir(), "cap")
	if _, err := (&Client{Addr: addr}).Start(ctx, StartRequest{Out: dir}); err == nil {
		t.Error("a start without the token was accepted")
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a start without the token created %s: %v", dir, err)
	}
	if _, err := (&Client{Addr: addr, Token: "s3cret"}).Start(ctx, StartRequest{Out: dir}); err != nil {
		t.Errorf("with the token: %v", err)
	}
}

// TestAdminBadRequests: a start with a bad duration or size, or into a
// directory that holds a capture, is refused with 400 and the reason.
func TestAdminBadRequests(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	dir := filepath.Join(t.TempDir(), "cap")
	s := start(t, Config{Upstream: c.DSN("postgres"), Out: dir, Admin: "127.0.0.1:0"})
	ctx := context.Background()
	cl := &Client{Addr: s.admin}
	for _, tc := range []struct {
		req  StartRequest
		want string
		code int
	}{
		{StartRequest{}, `"out"`, http.StatusBadRequest},
		{StartRequest{Out: t.TempDir(), Duration: "soon"}, `"duration"`, http.StatusBadRequest},
		{StartRequest{Out: t.TempDir(), MaxSize: "10 parsecs"}, `"max_size"`, http.StatusBadRequest},
		// --out's capture is r1, under way.
		{StartRequest{Out: t.TempDir()}, "r1", http.StatusConflict},
	} {
		_, err := cl.Start(ctx, tc.req)
		var ae *AdminError
		if !errors.As(err, &ae) || ae.Code != tc.code || !strings.Contains(ae.Message, tc.want) {
			t.Errorf("start %+v: %v, want %d saying %s", tc.req, err, tc.code, tc.want)
		}
	}
	if _, err := cl.Stop(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	_, err := cl.Start(ctx, StartRequest{Out: dir})
	var ae *AdminError
	if !errors.As(err, &ae) || ae.Code != http.StatusBadRequest || !strings.Contains(ae.Message, "holds a capture") {
		t.Errorf("start into the finalized capture: %v, want 400", err)
	}
}

// TestShutdownDrains: stopping the run (SIGTERM) finalizes the recording
// under way at once, with its open sessions recorded as open; the proxy
// accepts no new connection and relays the open ones until they close
// (the run then returns, long before its drain) or EndDrain cuts it
// short.
func TestShutdownDrains(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	t.Run("until EndDrain", func(t *testing.T) {
		endDrain := make(chan struct{})
		finalized := make(chan Status, 1)
		draining, drained := make(chan DrainStart, 1), make(chan DrainEnd, 1)
		s := start(t, Config{Upstream: c.DSN("postgres"), Admin: "127.0.0.1:0", Drain: time.Hour, EndDrain: endDrain,
			RecordingFinalized: func(st Status) { finalized <- st },
			Draining:           func(d DrainStart) { draining <- d }, Drained: func(d DrainEnd) { drained <- d }})
		dir := filepath.Join(t.TempDir(), "cap")
		if _, err := (&Client{Addr: s.admin}).Start(ctx, StartRequest{Out: dir}); err != nil {
			t.Fatal(err)
		}
		a, b := connect(t, s), connect(t, s)
		exec(t, a, "SELECT 'a before'")
		pid := backendPID(t, b)
		stopped := time.Now()
		s.cancel()
		// The drain says so as it begins: a silent one looks like a hang.
		select {
		case d := <-draining:
			if d.Open != 2 || d.Until.Before(stopped.Add(time.Hour)) || d.Until.After(time.Now().Add(time.Hour)) {
				t.Errorf("drain begun %+v: want 2 connections open, until an hour after the stop", d)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no drain announced within 30 s of the stop")
		}
		var st Status
		select {
		case st = <-finalized:
		case <-time.After(30 * time.Second):
			t.Fatal("the recording was not finalized within 30 s of the stop")
		}
		if st.StopReason != StopInterrupted || !st.Complete || st.OpenAtEnd != 2 {
			t.Errorf("finalized %+v: want complete, interrupted, both sessions open", st)
		}
		if _, err := capture.ReadManifest(dir); err != nil {
			t.Errorf("no manifest once finalized: %v", err)
		}
		// Draining: the open connections work, a new one is refused.
		exec(t, a, "SELECT 'a while draining'")
		if got := backendPID(t, b); got != pid {
			t.Errorf("b's backend %s while draining, was %s", got, pid)
		}
		if conn, err := pgconn.Connect(ctx, s.dsn()); err == nil {
			conn.Close(ctx)
			t.Error("a new connection was accepted while draining")
		}
		a.Close(ctx)
		exec(t, b, "SELECT 'b while draining'")
		// a's end reached the proxy before the drain is cut short, so
		// that it counts as closed by itself.
		poll(t, "a's session ended in the proxy", func() bool {
			l, err := (&Client{Addr: s.admin}).List(ctx)
			return err == nil && l.SessionsOpen == 1
		})
		close(endDrain)
		var r result
		select {
		case r = <-s.done:
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return once the drain was ended")
		}
		if r.err != nil {
			t.Fatal(r.err)
		}
		select {
		case d := <-drained:
			if d.Closed != 1 || d.Cut != 1 || d.Ended != DrainCutShort {
				t.Errorf("drain ended %+v: want a closed by itself, b cut, by EndDrain", d)
			}
		default:
			t.Error("Run returned without telling the drain's end")
		}
		if _, err := b.Exec(ctx, "SELECT 1").ReadAll(); err == nil {
			t.Error("b still relayed after the drain ended")
		}
		if got, want := statements(t, dir), []string{"SELECT 'a before'", "SELECT pg_backend_pid()"}; !slices.Equal(got, want) {
			t.Errorf("the capture holds %q, want %q (nothing after the stop)", got, want)
		}
	})
	t.Run("until the last connection closes", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "cap")
		drained := make(chan DrainEnd, 1)
		draining := make(chan DrainStart, 1)
		s := start(t, Config{Upstream: c.DSN("postgres"), Out: dir, Drain: time.Hour, Draining: func(d DrainStart) { draining <- d }, Drained: func(d DrainEnd) { drained <- d }})
		a := connect(t, s)
		exec(t, a, "SELECT 1")
		s.cancel()
		poll(t, "the capture finalized", func() bool {
			_, err := capture.ReadManifest(dir)
			return err == nil
		})
		// The drain counts the connections open when it begins: the
		// client closes after that (on a busy machine the proxy's
		// accept loop may reach the drain after the capture is final).
		select {
		case d := <-draining:
			if d.Open != 1 {
				t.Errorf("drain began with %d connections open, want 1", d.Open)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the drain did not begin within 30 s of the stop")
		}
		exec(t, a, "SELECT 2")
		a.Close(ctx)
		select {
		case r := <-s.done:
			if r.err != nil || r.sum.OpenAtEnd != 1 || !r.sum.Manifest.Complete || r.sum.Stopped != StopInterrupted {
				t.Errorf("Run: %v, summary %+v: want the capture complete, interrupted, a session open at the end", r.err, r.sum)
			}
			select {
			case d := <-drained:
				if d.Closed != 1 || d.Cut != 0 || d.Ended != DrainAllClosed {
					t.Errorf("drain ended %+v: want the one connection closed by itself, none cut", d)
				}
			default:
				t.Error("Run returned without telling the drain's end")
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return once its last connection closed (its drain is an hour)")
		}
	})
}

// TestStartWhileReadingStartState (issue 60): a start reading its
// starting point from an upstream that does not answer holds no lock
// meanwhile (the recordings are listed, a second start is refused at
// once with the id of the one under way) and stops when its request's
// context is canceled.
func TestStartWhileReadingStartState(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c // and never answered
		}
	}()
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	rs := newRecordings(nil, Config{MonitorDSN: "host=" + host + " port=" + port + " user=x dbname=x sslmode=disable"}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := rs.Start(ctx, StartOptions{Out: filepath.Join(t.TempDir(), "never")})
		done <- err
	}()
	conn := <-accepted
	defer conn.Close()
	if l := rs.List(); len(l) != 0 || rs.Current() != "" {
		t.Errorf("listed %+v while a start reads its starting point: want nothing yet", l)
	}
	var busy *BusyError
	if _, err := rs.Start(context.Background(), StartOptions{Out: filepath.Join(t.TempDir(), "second")}); !errors.As(err, &busy) || busy.ID != "r1" {
		t.Errorf("a second start while the first reads its starting point: %v, want busy with r1", err)
	}
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a start whose request was canceled succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a start whose request was canceled still waits for the upstream")
	}
	// The reservation ended with the start: the next one is r1 again.
	if id, err := rs.reserve(); err != nil || id != "r1" {
		t.Errorf("a start after a canceled one: %q, %v: want r1", id, err)
	}
}

// asyncpgPrepare prepares name on conn as asyncpg does: Parse,
// Describe, Flush, and no Sync until the statement's first use, which
// asyncpgLookup sends.
func asyncpgPrepare(t *testing.T, conn *pgconn.PgConn, name, query string) {
	t.Helper()
	ctx := context.Background()
	f := conn.Frontend()
	f.Send(&pgproto3.Parse{Name: name, Query: query})
	f.Send(&pgproto3.Describe{ObjectType: 'S', Name: name})
	f.Send(&pgproto3.Flush{})
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := conn.ReceiveMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		switch m := m.(type) {
		case *pgproto3.RowDescription, *pgproto3.NoData:
			return
		case *pgproto3.ErrorResponse:
			t.Fatalf("prepare %s: %s", name, m.Message)
		}
	}
}

// asyncpgLookup runs name as asyncpg does: Bind, Execute, Sync.
func asyncpgLookup(t *testing.T, conn *pgconn.PgConn, name, arg string) {
	t.Helper()
	f := conn.Frontend()
	f.Send(&pgproto3.Bind{PreparedStatement: name, Parameters: [][]byte{[]byte(arg)}})
	f.Send(&pgproto3.Execute{})
	f.Send(&pgproto3.Sync{})
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := conn.ReceiveMessage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		switch m := m.(type) {
		case *pgproto3.ErrorResponse:
			t.Fatalf("%s: %s", name, m.Message)
		case *pgproto3.ReadyForQuery:
			return
		}
	}
}

// TestRecordingStartsAfterFlushedPrepare is issue 77 item 3 at the
// message level (TestDrivers' asyncpg-start case runs asyncpg itself):
// three connections each set work_mem and prepare a statement as asyncpg
// does (Parse, Describe, Flush: the Sync comes with its first use), one
// of them inside a transaction still open when the first recording
// starts. Every call the two idle connections send after the start
// answered is in it, their first included, nothing skipped as in
// flight; so in a second recording of the same connections, each
// having prepared another statement so, of all three.
func TestRecordingStartsAfterFlushedPrepare(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	s := start(t, Config{Upstream: c.DSN("postgres"), Admin: "127.0.0.1:0"})
	ctx := context.Background()
	cl := &Client{Addr: s.admin}
	const lookup, perConn = "SELECT $1::int + 1", 5
	conns := []*pgconn.PgConn{connect(t, s), connect(t, s), connect(t, s)}
	inTx := conns[2]
	exec(t, inTx, "BEGIN")
	for _, conn := range conns {
		exec(t, conn, "SET work_mem = '8MB'")
		asyncpgPrepare(t, conn, "lookup1", lookup)
	}
	for round, sending := range [][]*pgconn.PgConn{conns[:2], conns} {
		stmt := "lookup" + strconv.Itoa(round+1)
		dir := filepath.Join(t.TempDir(), stmt)
		st, err := cl.Start(ctx, StartRequest{Out: dir})
		if err != nil {
			t.Fatal(err)
		}
		if st.Resumed != int64(len(sending)) {
			t.Errorf("round %d: started %+v: want the %d idle sessions taken up at once", round, st, len(sending))
		}
		for _, conn := range sending {
			for i := range perConn {
				asyncpgLookup(t, conn, stmt, strconv.Itoa(i))
			}
		}
		if st, err = cl.Stop(ctx, st.ID); err != nil {
			t.Fatal(err)
		}
		if st.Resumed != int64(len(sending)) || st.ResumedLate != 0 || len(st.SkippedBeforeRecording) != 0 || !st.Complete {
			t.Errorf("round %d: stopped %+v: want %d sessions taken up at the start, none late, no message skipped", round, st, len(sending))
		}
		got := calls(t, dir)
		if want := slices.Repeat([]string{lookup}, perConn*len(sending)); !slices.Equal(got, want) {
			t.Errorf("round %d: the recording holds %d calls, want the %d sent after the start answered", round, len(got), len(want))
		}
		if round == 0 {
			exec(t, inTx, "COMMIT")
			for _, conn := range conns {
				asyncpgPrepare(t, conn, "lookup2", lookup)
			}
		}
	}
}
