package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/querystats"
)

// wireSession connects a bare session, as the replay's, to dsn. cfg, when
// not nil, edits the connection settings first.
func wireSession(t *testing.T, hard context.Context, dsn string, cfg func(*pgconn.Config)) *session {
	t.Helper()
	c, err := pgconn.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if cfg != nil {
		cfg(c)
	}
	conn, err := pgconn.ConnectConfig(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	s := &session{r: &Replayer{hard: hard}, conn: conn}
	s.unwatch = s.watchHard(conn)
	t.Cleanup(func() {
		if s.unwatch != nil {
			s.unwatch()
		}
		conn.Close(context.Background())
	})
	return s
}

// sqlState is the SQLSTATE of a server error, or "".
func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// checkUsable fails unless the session's connection is idle, outside a
// transaction and answers a query.
func checkUsable(t *testing.T, s *session, after string) {
	t.Helper()
	if s.conn.IsClosed() || s.conn.IsBusy() {
		t.Fatalf("after %s: connection closed %v, busy %v", after, s.conn.IsClosed(), s.conn.IsBusy())
	}
	if err := s.execSimple("SELECT 1"); err != nil {
		t.Fatalf("after %s: %v", after, err)
	}
	// pgconn itself can still use it.
	res, err := s.conn.Exec(context.Background(), "SELECT 'ok'").ReadAll()
	if err != nil || len(res) != 1 || string(res[0].Rows[0][0]) != "ok" {
		t.Fatalf("after %s: pgconn Exec: %v %v", after, res, err)
	}
}

// TestWireProtocolPaths runs the statements the message-level path must
// get right against a real server: errors in the middle of a stream of
// rows, many rows, COPY TO STDOUT alone and among other statements, COPY
// FROM STDIN (answered with CopyFail), notices, notifications, parameter
// status, transaction status, errors after CommandComplete, and after each
// one the connection must be usable by both this path and pgconn.
func TestWireProtocolPaths(t *testing.T) {
	slowCase(t, 6*time.Second)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	pgclustertest.Exec(t, c, "postgres", `CREATE TABLE wt (id int PRIMARY KEY);
		CREATE TABLE wd (id int PRIMARY KEY, ref int REFERENCES wt DEFERRABLE INITIALLY DEFERRED)`)
	var mu sync.Mutex
	var notices []string
	var notifications []string
	s := wireSession(t, ctx, c.DSN("postgres"), func(cfg *pgconn.Config) {
		cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
			mu.Lock()
			notices = append(notices, n.Message)
			mu.Unlock()
		}
		cfg.OnNotification = func(_ *pgconn.PgConn, n *pgconn.Notification) {
			mu.Lock()
			notifications = append(notifications, n.Channel+":"+n.Payload)
			mu.Unlock()
		}
	})

	// An error after rows were sent, simple and extended.
	midStream := "SELECT 1/(5-x) FROM generate_series(1, 100000) x"
	if err := s.execSimple(midStream); sqlState(err) != "22012" {
		t.Errorf("simple error mid-stream: %v", err)
	}
	checkUsable(t, s, "simple error mid-stream")
	if err := s.execParams("SELECT 1/($1::int-x) FROM generate_series(1, 100000) x", [][]byte{[]byte("50000")}, nil); sqlState(err) != "22012" {
		t.Errorf("extended error mid-stream: %v", err)
	}
	checkUsable(t, s, "extended error mid-stream")

	// Many rows, bigger than any buffer.
	many := "SELECT x, repeat('y', 500) FROM generate_series(1, 200000) x"
	if err := s.execSimple(many); err != nil {
		t.Errorf("many rows, simple: %v", err)
	}
	if err := s.execParams(many, nil, nil); err != nil {
		t.Errorf("many rows, unnamed: %v", err)
	}
	if _, err := s.conn.Prepare(ctx, "many", many, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.execPrepared("many", nil, nil); err != nil {
		t.Errorf("many rows, prepared: %v", err)
	}
	checkUsable(t, s, "many rows")

	// Row counts from the command tags, per statement of a string, in
	// each protocol.
	if err := s.execSimple("INSERT INTO wt SELECT generate_series(1001, 1005); UPDATE wt SET id = id WHERE id > 1002; SELECT * FROM wt WHERE id > 1000; BEGIN; DELETE FROM wt WHERE id > 1000; COMMIT"); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(s.w.rows); got != "[5 3 5 0 5 0]" {
		t.Errorf("rows of a simple string: %s, want [5 3 5 0 5 0]", got)
	}
	if err := s.execParams("SELECT x FROM generate_series(1, $1::int) x", [][]byte{[]byte("7")}, nil); err != nil || fmt.Sprint(s.w.rows) != "[7]" {
		t.Errorf("rows of an unnamed statement: %v, %v", s.w.rows, err)
	}
	if err := s.execPrepared("many", nil, nil); err != nil || fmt.Sprint(s.w.rows) != "[200000]" {
		t.Errorf("rows of a prepared statement: %v, %v", s.w.rows, err)
	}

	// Parse, bind and execution errors of the extended protocol.
	if err := s.execParams("SELEC 1", nil, nil); sqlState(err) != "42601" {
		t.Errorf("parse error: %v", err)
	}
	if err := s.execParams("SELECT $1::int", [][]byte{[]byte("x")}, nil); sqlState(err) != "22P02" {
		t.Errorf("bind error: %v", err)
	}
	if err := s.execPrepared("nosuch", nil, nil); sqlState(err) != "26000" {
		t.Errorf("unknown statement: %v", err)
	}
	// NULL and '' as bindParams makes them: 1/0 fails unless the
	// parameter arrived as expected.
	nullAndEmpty := s.bindParams([]event.Param{{Null: true}, {Value: ""}})
	if err := s.execParams("SELECT 1/(($1::text IS NULL AND $2::text = '')::int)", nullAndEmpty, nil); err != nil {
		t.Errorf("NULL and '' parameters: %v", err)
	}
	checkUsable(t, s, "extended errors")

	// COPY TO STDOUT, alone and in a string of several statements.
	if err := s.execSimple("COPY (SELECT x, repeat('z', 300) FROM generate_series(1, 50000) x) TO STDOUT"); err != nil {
		t.Errorf("COPY TO STDOUT: %v", err)
	}
	if err := s.execSimple("SELECT 1; COPY (SELECT 1) TO STDOUT; SELECT 2"); err != nil {
		t.Errorf("COPY TO STDOUT among statements: %v", err)
	}
	checkUsable(t, s, "COPY TO STDOUT")

	// COPY FROM STDIN that was not skipped fails instead of hanging.
	done := make(chan error, 1)
	go func() { done <- s.execSimple("COPY wt FROM STDIN") }()
	select {
	case err := <-done:
		if sqlState(err) != "57014" {
			t.Errorf("COPY FROM STDIN: %v, want 57014 after CopyFail", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("COPY FROM STDIN hangs")
	}
	checkUsable(t, s, "COPY FROM STDIN")
	go func() { done <- s.execParams("COPY wt FROM STDIN", nil, nil) }()
	select {
	case err := <-done:
		if sqlState(err) != "57014" {
			t.Errorf("COPY FROM STDIN, extended: %v, want 57014 after CopyFail", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("COPY FROM STDIN, extended, hangs")
	}
	checkUsable(t, s, "COPY FROM STDIN, extended")

	// Notices, simple and extended.
	if err := s.execSimple("DO $$BEGIN RAISE NOTICE 'simple notice'; END$$"); err != nil {
		t.Error(err)
	}
	if err := s.execParams("SELECT count(*) FROM (SELECT 1) x WHERE $1::text IS NOT NULL", [][]byte{[]byte("a")}, nil); err != nil {
		t.Error(err)
	}
	if err := s.execSimple("CREATE FUNCTION pg_temp.noisy(t text) RETURNS int LANGUAGE plpgsql AS $$BEGIN RAISE NOTICE '%', t; RETURN 1; END$$"); err != nil {
		t.Fatal(err)
	}
	if err := s.execParams("SELECT pg_temp.noisy($1)", [][]byte{[]byte("extended notice")}, nil); err != nil {
		t.Error(err)
	}
	mu.Lock()
	if strings.Join(notices, "|") != "simple notice|extended notice" {
		t.Errorf("notices %q", notices)
	}
	mu.Unlock()

	// A notification from another session arrives with a statement.
	if err := s.execSimple("LISTEN wire_ch"); err != nil {
		t.Fatal(err)
	}
	pgclustertest.Exec(t, c, "postgres", "NOTIFY wire_ch, 'hello'")
	if err := s.execSimple("SELECT 1"); err != nil {
		t.Error(err)
	}
	if err := s.execParams("SELECT 1", nil, nil); err != nil {
		t.Error(err)
	}
	mu.Lock()
	if strings.Join(notifications, "|") != "wire_ch:hello" {
		t.Errorf("notifications %q", notifications)
	}
	mu.Unlock()

	// pgconn follows ParameterStatus and the transaction status.
	if err := s.execSimple("SET application_name = 'wire test'"); err != nil {
		t.Error(err)
	}
	if got := s.conn.ParameterStatus("application_name"); got != "wire test" {
		t.Errorf("application_name %q", got)
	}
	if err := s.execSimple("BEGIN"); err != nil || s.conn.TxStatus() != 'T' {
		t.Errorf("BEGIN: %v, status %c", err, s.conn.TxStatus())
	}
	// An error after CommandComplete: a deferred constraint, at COMMIT.
	if err := s.execParams("INSERT INTO wd VALUES ($1, $2)", [][]byte{[]byte("1"), []byte("42")}, nil); err != nil {
		t.Error(err)
	}
	if err := s.execSimple("COMMIT"); sqlState(err) != "23503" {
		t.Errorf("deferred constraint: %v", err)
	}
	if s.conn.TxStatus() != 'I' {
		t.Errorf("status %c after COMMIT", s.conn.TxStatus())
	}
	if err := s.execSimple("BEGIN; SELECT 1/0"); sqlState(err) != "22012" || s.conn.TxStatus() != 'E' {
		t.Errorf("failed transaction: %v, status %c", err, s.conn.TxStatus())
	}
	if err := s.execSimple("ROLLBACK"); err != nil {
		t.Error(err)
	}
	checkUsable(t, s, "transactions")

	// An empty query.
	if err := s.execSimple(";"); err != nil {
		t.Errorf("empty query: %v", err)
	}
	checkUsable(t, s, "empty query")

	// FATAL: the connection is gone, and the error says so.
	err := s.execSimple("SELECT pg_terminate_backend(pg_backend_pid())")
	if te := classifyError(err, s.conn); !te.lost || te.code != "57P01" {
		t.Errorf("terminated: %+v (%v)", te, err)
	}
}

// TestWireHardCancel: the end of the hard context cancels a statement in
// flight on the server (a CancelRequest): its exchange ends with the
// server's 57014 at once, the backend is no longer running it, and the
// connection stays usable (for the ROLLBACK of the stop). A target that
// stopped answering has the exchange cut instead.
func TestWireHardCancel(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	hard, cancel := context.WithCancel(ctx)
	defer cancel()
	s := wireSession(t, hard, c.DSN("postgres"), nil)
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	s.busyUntil.Store(start.Add(time.Hour).UnixNano()) // in flight, as exec marks it
	err := s.execSimple("SELECT pg_sleep(30)")
	s.busyUntil.Store(0)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancelled after %v", d)
	}
	if sqlState(err) != CanceledSQLState || s.conn.IsClosed() {
		t.Errorf("cancelled statement: %v, connection closed %v", err, s.conn.IsClosed())
	}
	// The cancel request is counted once the server closed its
	// connection, which may come after the statement's answer.
	for deadline := time.Now().Add(10 * time.Second); s.r.c.cancelled.Load() != 1 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond) // polling
	}
	if !s.r.hardDone.Load() || s.r.c.cancelled.Load() != 1 {
		t.Errorf("hard done %v, cancelled %d", s.r.hardDone.Load(), s.r.c.cancelled.Load())
	}
	checkUsable(t, s, "after the cancel")
	if n := activeSleeps(t, c); n != 0 {
		t.Errorf("%d pg_sleep still active on the server", n)
	}

	// The target silent: no cancel request, the socket cut at once.
	hard2, cancel2 := context.WithCancel(ctx)
	defer cancel2()
	s2 := wireSession(t, hard2, c.DSN("postgres"), nil)
	s2.r.silent.Store(true)
	time.AfterFunc(200*time.Millisecond, cancel2)
	start = time.Now()
	s2.busyUntil.Store(start.Add(time.Hour).UnixNano())
	err = s2.execSimple("SELECT pg_sleep(30)")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cut after %v", d)
	}
	if te := classifyError(err, s2.conn); !te.lost || s2.r.c.cancelled.Load() != 0 {
		t.Errorf("cut statement: %+v (%v)", te, err)
	}
}

// activeSleeps counts the backends running pg_sleep.
func activeSleeps(t *testing.T, c *pgcluster.Cluster) int {
	t.Helper()
	conn, err := pgconn.Connect(context.Background(), c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	res := conn.ExecParams(context.Background(), "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%pg_sleep(30)%' AND pid <> pg_backend_pid()", nil, nil, nil, nil).Read()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	n := 0
	fmt.Sscan(string(res.Rows[0][0]), &n)
	return n
}

// TestWireSameMessages: the messages sent are those of the pgconn calls
// the replay used before, byte for byte.
func TestWireSameMessages(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	s := wireSession(t, ctx, c.DSN("postgres"), nil)
	if _, err := s.conn.Prepare(ctx, "p", "SELECT $1::text, $2::int", nil); err != nil {
		t.Fatal(err)
	}
	params := [][]byte{[]byte("a"), nil}
	intParams := [][]byte{[]byte(""), []byte("3")}
	cases := []struct {
		name    string
		old     func() error
		current func() error
	}{
		{"prepared", func() error {
			_, err := s.conn.ExecPrepared(ctx, "p", params, nil, nil).Close()
			return err
		}, func() error { return s.execPrepared("p", params, nil) }},
		{"unnamed", func() error {
			_, err := s.conn.ExecParams(ctx, "SELECT $1, $2::int", intParams, nil, nil, nil).Close()
			return err
		}, func() error { return s.execParams("SELECT $1, $2::int", intParams, nil) }},
		{"simple", func() error {
			return s.conn.Exec(ctx, "SELECT 1; SELECT 2").Close()
		}, func() error { return s.execSimple("SELECT 1; SELECT 2") }},
	}
	trace := func(run func() error) string {
		var buf bytes.Buffer
		s.conn.Frontend().Trace(&buf, pgproto3.TracerOptions{SuppressTimestamps: true})
		err := run()
		s.conn.Frontend().Untrace()
		if err != nil {
			t.Fatal(err)
		}
		var sent []string
		for line := range strings.Lines(buf.String()) {
			if strings.HasPrefix(line, "F") {
				sent = append(sent, line)
			}
		}
		return strings.Join(sent, "")
	}
	for _, tc := range cases {
		old, cur := trace(tc.old), trace(tc.current)
		if old != cur || old == "" {
			t.Errorf("%s: sent\n%s\nwant\n%s", tc.name, cur, old)
		}
	}
}

// TestBindParams: NULL is nil, ” is empty but not nil, values are the
// event's bytes.
func TestTagRows(t *testing.T) {
	functionalCase(t)
	for tag, want := range map[string]int64{
		"INSERT 0 5": 5, "UPDATE 12": 12, "DELETE 0": 0, "SELECT 3": 3, "MERGE 2": 2, "COPY 50000": 50000,
		"FETCH 10": 10, "MOVE 4": 4, "BEGIN": 0, "CREATE TABLE": 0, "": 0, "SELECT": 0,
		"X9": 0, "SELECT 99999999999999999999": 0,
	} {
		if got := tagRows([]byte(tag)); got != want {
			t.Errorf("tagRows(%q) = %d, want %d", tag, got, want)
		}
	}
}

func TestBindParams(t *testing.T) {
	functionalCase(t)
	var s session
	got := s.bindParams([]event.Param{{Value: "a'b"}, {Null: true}, {Value: ""}, {Value: "42"}})
	if len(got) != 4 || string(got[0]) != "a'b" || got[1] != nil || got[2] == nil || len(got[2]) != 0 || string(got[3]) != "42" {
		t.Errorf("params %q (nil: %v %v)", got, got[1] == nil, got[2] == nil)
	}
	if got := s.bindParams(nil); len(got) != 0 {
		t.Errorf("no parameters: %q", got)
	}
}

// TestWireCaptured: what a capture knows and a log does not goes to the
// server as the original sent it: parameter types named in the Parse,
// parameters in binary, and COPY data, by the simple and the extended
// protocol.
func TestWireCaptured(t *testing.T) {
	functionalCase(t)
	ctx := context.Background()
	c := pgclustertest.StartT(t, pgcluster.Options{})
	s := wireSession(t, ctx, c.DSN("postgres"), nil)
	if err := s.execSimple("CREATE TABLE wc (id int, t text)"); err != nil {
		t.Fatal(err)
	}
	// int8 42 in binary, typed by the Parse: without the type the server
	// would take 8 bytes of text for "unknown" and fail to compare.
	bin := []byte{0, 0, 0, 0, 0, 0, 0, 42}
	w := &event.Wire{ParamOIDs: []uint32{20}, ParamFormats: []int16{1}, ResultFormats: []int16{1}}
	if err := s.execParams("SELECT $1 + 1", [][]byte{bin}, w); err != nil || fmt.Sprint(s.w.rows) != "[1]" {
		t.Errorf("binary int8 with its type: %v, rows %v", err, s.w.rows)
	}
	if err := s.prepare(ctx, "p8", "SELECT $1 * 2", []uint32{20}); err != nil {
		t.Fatal(err)
	}
	if err := s.execPrepared("p8", [][]byte{bin}, w); err != nil {
		t.Errorf("binary int8, prepared with its type: %v", err)
	}
	// The same bytes as text fail: the formats are what made it work.
	if err := s.execParams("SELECT $1::int8 + 1", [][]byte{bin}, nil); sqlState(err) == "" {
		t.Error("binary bytes sent as text succeeded: the formats are not what the test checks")
	}
	checkUsable(t, s, "binary parameters")

	s.w.copyIns = []event.CopyIn{{Data: [][]byte{[]byte("1\tone\n2\ttwo\n"), []byte("3\tthree\n")}}}
	if err := s.execSimple("COPY wc FROM STDIN"); err != nil || fmt.Sprint(s.w.rows) != "[3]" {
		t.Errorf("COPY FROM STDIN with its data: %v, rows %v", err, s.w.rows)
	}
	s.w.copyIns = []event.CopyIn{{Data: [][]byte{[]byte("4\tfour\n")}}}
	if err := s.execParams("COPY wc FROM STDIN", nil, nil); err != nil || fmt.Sprint(s.w.rows) != "[1]" {
		t.Errorf("COPY FROM STDIN with its data, extended: %v, rows %v", err, s.w.rows)
	}
	checkUsable(t, s, "COPY with data")
	// Two COPYs in one string, each with its own data.
	s.w.copyIns = []event.CopyIn{{Data: [][]byte{[]byte("5\tfive\n6\tsix\n")}}, {Data: [][]byte{[]byte("7\tseven\n")}}}
	if err := s.execSimple("COPY wc FROM STDIN; COPY wc FROM STDIN"); err != nil || fmt.Sprint(s.w.rows) != "[2 1]" {
		t.Errorf("two COPYs in one string: %v, rows %v", err, s.w.rows)
	}
	// A COPY the original client failed fails here too.
	s.w.copyIns = []event.CopyIn{{Data: [][]byte{[]byte("8\teight\n")}, Failed: true}}
	if err := s.execSimple("COPY wc FROM STDIN"); sqlState(err) != "57014" {
		t.Errorf("a COPY the client failed: %v, want 57014", err)
	}
	checkUsable(t, s, "COPY failed")
	if err := s.execSimple("SELECT * FROM wc"); err != nil || fmt.Sprint(s.w.rows) != "[7]" {
		t.Errorf("rows after the COPYs: %v, %v", err, s.w.rows)
	}

	// A portal read 2 rows at a time: the first Execute binds the
	// original's portal, each Fetch goes on without a Bind.
	if err := s.execSimple("BEGIN"); err != nil {
		t.Fatal(err)
	}
	s.w.portal = "C_1"
	limit := &event.Wire{MaxRows: 2}
	if err := s.execParams("SELECT g FROM generate_series(1, 5) g", nil, limit); err != nil || fmt.Sprint(s.w.rows) != "[2]" {
		t.Errorf("first batch: %v, rows %v", err, s.w.rows)
	}
	var batches []string
	for range 3 {
		if err := s.execFetch("C_1", limit); err != nil {
			t.Fatalf("fetch: %v", err)
		}
		batches = append(batches, fmt.Sprint(s.w.rows))
	}
	if fmt.Sprint(batches) != "[[2] [1] [0]]" {
		t.Errorf("batches %v, want [[2] [1] [0]]", batches)
	}
	// Bound again under the same name (the Close before the Bind).
	if err := s.execParams("SELECT 1", nil, limit); err != nil || fmt.Sprint(s.w.rows) != "[1]" {
		t.Errorf("the portal bound again: %v, rows %v", err, s.w.rows)
	}
	// A fast-path call: lo_creat(INV_READ|INV_WRITE), binary int4.
	call := &event.Wire{FunctionOID: 957, ParamFormats: []int16{1}, ResultFormats: []int16{1}}
	if err := s.execFunctionCall(call, [][]byte{{0, 6, 0, 0}}); err != nil {
		t.Errorf("fast-path lo_creat: %v", err)
	}
	if err := s.execSimple("SELECT 1 FROM pg_largeobject_metadata"); err != nil || fmt.Sprint(s.w.rows) != "[1]" {
		t.Errorf("large objects after lo_creat: %v, rows %v", err, s.w.rows)
	}
	if err := s.execSimple("COMMIT"); err != nil {
		t.Fatal(err)
	}
	checkUsable(t, s, "fetches and a function call")

	// A cursor read with Flush, no Sync (node-postgres' pg-cursor): the
	// portal lives outside a transaction block until the Sync.
	s.w.portal = "C_2"
	flushed := &event.Wire{MaxRows: 2, NoSync: true}
	if err := s.execParams("SELECT g FROM generate_series(1, 5) g", nil, flushed); err != nil || fmt.Sprint(s.w.rows) != "[2]" {
		t.Errorf("first batch without Sync: %v, rows %v", err, s.w.rows)
	}
	batches = batches[:0]
	for range 2 {
		if err := s.execFetch("C_2", flushed); err != nil {
			t.Fatalf("fetch without Sync: %v", err)
		}
		batches = append(batches, fmt.Sprint(s.w.rows))
	}
	if fmt.Sprint(batches) != "[[2] [1]]" {
		t.Errorf("batches without Sync %v, want [[2] [1]]", batches)
	}
	// A fetch of no portal fails, and the Sync sent then makes the
	// session usable.
	if err := s.execFetch("C_none", flushed); sqlState(err) != "34000" {
		t.Errorf("fetch of no portal: %v, want 34000", err)
	}
	checkUsable(t, s, "fetches without Sync")
}

// TestAnswerDiffers: a replayed execution against the original's recorded
// answer.
func TestAnswerDiffers(t *testing.T) {
	functionalCase(t)
	ok := &event.Event{}
	failed := &event.Event{Failed: true, SQLState: "23505"}
	ans := &event.Answer{Rows: []int64{1, 5}}
	for _, c := range []struct {
		name   string
		ev     *event.Event
		i, k   int
		rows   []int64
		failed bool
		code   string
		want   querystats.AnswerDiff
	}{
		{"same", ok, 1, 2, []int64{1, 5}, false, "", querystats.AnswerSame},
		{"rows", ok, 1, 2, []int64{1, 4}, false, "", querystats.AnswerRows},
		{"rows of an earlier statement", ok, 0, 2, []int64{2, 5}, false, "", querystats.AnswerRows},
		{"only on target", ok, 1, 2, []int64{1}, true, "40001", querystats.AnswerErrorOnlyOnTarget},
		{"only in original", failed, 1, 2, []int64{1, 5}, false, "", querystats.AnswerErrorOnlyInOriginal},
		{"other sqlstate", failed, 1, 2, []int64{1}, true, "40001", querystats.AnswerOtherSQLState},
		{"same sqlstate", failed, 1, 2, []int64{1}, true, "23505", querystats.AnswerSame},
		{"the error is the last statement's", ok, 0, 2, []int64{1}, true, "40001", querystats.AnswerSame},
	} {
		if got := answerDiffers(c.ev, ans, c.i, c.k, c.rows, c.failed, c.code); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
