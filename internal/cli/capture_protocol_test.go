package cli

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/querystats"
)

// protoClient drives a connection through the proxy at the message
// level, as drivers do: pgconn's own calls never send a row limit, a
// fast-path call or two COPYs in one string.
type protoClient struct {
	t    *testing.T
	conn *pgconn.PgConn
}

// newProtoClient connects to dsn (through a capture's proxy) as a
// protoClient of t.
func newProtoClient(ctx context.Context, t *testing.T, dsn string) *protoClient {
	t.Helper()
	conn := pgclustertest.PgConn(ctx, t, dsn)
	return &protoClient{t: t, conn: conn}
}

// until sends what was written and reads the answers up to
// ReadyForQuery, giving each to on; it returns the first error's
// SQLSTATE.
func (c *protoClient) until(on func(pgproto3.BackendMessage)) string {
	c.t.Helper()
	if err := c.conn.Frontend().Flush(); err != nil {
		c.t.Fatal(err)
	}
	code := ""
	for {
		msg, err := c.conn.ReceiveMessage(context.Background())
		if err != nil {
			c.t.Fatal(err)
		}
		if on != nil {
			on(msg)
		}
		switch m := msg.(type) {
		case *pgproto3.ErrorResponse:
			if code == "" {
				code = m.Code
			}
		case *pgproto3.ReadyForQuery:
			return code
		}
	}
}

func (c *protoClient) simple(sql string) string {
	c.conn.Frontend().Send(&pgproto3.Query{String: sql})
	return c.until(nil)
}

// call makes a fast-path call with int4 arguments in binary and returns
// its result, an int4 in binary.
func (c *protoClient) call(oid uint32, args ...[]byte) int32 {
	c.t.Helper()
	c.conn.Frontend().Send(&pgproto3.FunctionCall{Function: oid, ArgFormatCodes: []uint16{1}, Arguments: args, ResultFormatCode: 1})
	var res int32
	if code := c.until(func(m pgproto3.BackendMessage) {
		if r, ok := m.(*pgproto3.FunctionCallResponse); ok && len(r.Result) == 4 {
			res = int32(binary.BigEndian.Uint32(r.Result))
		}
	}); code != "" {
		c.t.Fatalf("fast-path call of %d: %s", oid, code)
	}
	return res
}

func int4(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

// Built-in functions' OIDs (pg_proc.dat), as libpq's fe-lobj.c calls them.
const (
	oidLoOpen  = 952
	oidLoClose = 953
	oidLoWrite = 955
	oidLoCreat = 957
)

const (
	batchedQuery = "SELECT id, v FROM big WHERE id > $1 ORDER BY id"
	cursorQuery  = "SELECT v FROM big WHERE id <= $1"
	pipedQuery   = "SELECT id FROM big WHERE id <= $1"
)

// read sends what was written and reads the answers up to the Execute's
// end, PortalSuspended or CommandComplete, counting the rows: a batch
// flushed without Sync gets no ReadyForQuery.
func (c *protoClient) read() (rows int, complete bool) {
	c.t.Helper()
	if err := c.conn.Frontend().Flush(); err != nil {
		c.t.Fatal(err)
	}
	for {
		msg, err := c.conn.ReceiveMessage(context.Background())
		if err != nil {
			c.t.Fatal(err)
		}
		switch m := msg.(type) {
		case *pgproto3.DataRow:
			rows++
		case *pgproto3.PortalSuspended:
			return rows, false
		case *pgproto3.CommandComplete:
			return rows, true
		case *pgproto3.ErrorResponse:
			c.t.Fatalf("%s: %s", m.Code, m.Message)
		}
	}
}

// TestCaptureProtocolForms captures, through the proxy, the protocol
// forms drivers send besides plain executions, and replays the capture
// onto a copy of the source as it was before: a portal read 100 rows at
// a time over 2,000 rows (JDBC's fetch size), one read with Flush and
// no Sync outside a transaction (node-postgres' cursors), two batches
// pipelined before one Sync, a statement cancelled
// after 0.5 s of pg_sleep(5), fast-path large-object calls as
// lo_import makes them (and psql's \lo_import itself), two COPY FROM
// STDIN in one string and a COPY refused before any data. pg_stat_statements' calls and rows per query
// are equal on both sides, the cancelled statement is cancelled on the
// target too, the large object and the COPYs' rows exist there, and no
// answer differs. Replayed onto a copy where the batched query finds no
// row, that query's answer differs.
func TestCaptureProtocolForms(t *testing.T) {
	parallelCase(t)
	ctx := context.Background()
	setup := "CREATE TABLE big AS SELECT g AS id, 'v' || g AS v FROM generate_series(1, 2000) g; CREATE TABLE ca (x int); CREATE TABLE cb (x int)"
	a, b := pgssPair(t, setup)
	mustExec(t, b, "postgres", "CREATE DATABASE changed")
	mustExec(t, b, "changed", setup+"; DELETE FROM big")

	rc := startCapture(t, a.DSN("postgres"), "--admin", "127.0.0.1:0")
	c := newProtoClient(ctx, t, rc.dsn(a.User(), "postgres"))
	conn, f := c.conn, c.conn.Frontend()

	// A portal read 100 rows at a time, in a transaction, as pgjdbc
	// with a fetch size: the first Execute after Parse and Bind, then
	// Execute on the portal alone, each with its Sync.
	if code := c.simple("BEGIN"); code != "" {
		t.Fatal(code)
	}
	f.Send(&pgproto3.Parse{Name: "S_1", Query: batchedQuery})
	f.Send(&pgproto3.Bind{PreparedStatement: "S_1", DestinationPortal: "C_1", Parameters: [][]byte{[]byte("0")}})
	f.Send(&pgproto3.Describe{ObjectType: 'P', Name: "C_1"})
	f.Send(&pgproto3.Execute{Portal: "C_1", MaxRows: 100})
	f.Send(&pgproto3.Sync{})
	rows, done, executes := 0, false, 1
	count := func(m pgproto3.BackendMessage) {
		switch m.(type) {
		case *pgproto3.DataRow:
			rows++
		case *pgproto3.CommandComplete:
			done = true
		}
	}
	if code := c.until(count); code != "" {
		t.Fatal(code)
	}
	for !done {
		f.Send(&pgproto3.Execute{Portal: "C_1", MaxRows: 100})
		f.Send(&pgproto3.Sync{})
		if code := c.until(count); code != "" {
			t.Fatal(code)
		}
		executes++
	}
	if code := c.simple("COMMIT"); code != "" || rows != 2000 || executes != 21 {
		t.Fatalf("batched read: %d rows in %d Executes (%s), want 2000 in 21", rows, executes, code)
	}

	// A cursor read 300 rows at a time with Flush, outside any
	// transaction block, and Sync only once it is closed, as
	// node-postgres' pg-cursor reads.
	f.Send(&pgproto3.Parse{Name: "S_2", Query: cursorQuery})
	f.Send(&pgproto3.Bind{PreparedStatement: "S_2", DestinationPortal: "C_2", Parameters: [][]byte{[]byte("1000")}})
	f.Send(&pgproto3.Execute{Portal: "C_2", MaxRows: 300})
	f.Send(&pgproto3.Flush{})
	cursorRows, fetches := 0, 0
	for done := false; !done; fetches++ {
		if fetches > 0 {
			f.Send(&pgproto3.Execute{Portal: "C_2", MaxRows: 300})
			f.Send(&pgproto3.Flush{})
		}
		var n int
		n, done = c.read()
		cursorRows += n
	}
	f.Send(&pgproto3.Close{ObjectType: 'P', Name: "C_2"})
	f.Send(&pgproto3.Sync{})
	if code := c.until(nil); code != "" || cursorRows != 1000 || fetches != 4 {
		t.Fatalf("cursor: %d rows in %d Executes (%s), want 1000 in 4", cursorRows, fetches, code)
	}

	// Two batches of a portal pipelined before one Sync, outside any
	// transaction block.
	f.Send(&pgproto3.Parse{Name: "S_3", Query: pipedQuery})
	f.Send(&pgproto3.Bind{PreparedStatement: "S_3", DestinationPortal: "C_3", Parameters: [][]byte{[]byte("300")}})
	f.Send(&pgproto3.Execute{Portal: "C_3", MaxRows: 200})
	f.Send(&pgproto3.Execute{Portal: "C_3", MaxRows: 200})
	f.Send(&pgproto3.Sync{})
	pipedRows := 0
	if code := c.until(func(m pgproto3.BackendMessage) {
		if _, ok := m.(*pgproto3.DataRow); ok {
			pipedRows++
		}
	}); code != "" || pipedRows != 300 {
		t.Fatalf("pipelined batches: %d rows (%s), want 300", pipedRows, code)
	}

	// pg_sleep(5) cancelled after 0.5 s.
	f.Send(&pgproto3.Query{String: "SELECT pg_sleep(5)"})
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // the application's own timeout, which the replay must reproduce
	if err := conn.CancelRequest(ctx); err != nil {
		t.Fatal(err)
	}
	if code := c.until(nil); code != "57014" {
		t.Fatalf("cancelled pg_sleep: %q, want 57014", code)
	}

	// lo_import's calls: lo_creat, lo_open, lowrite, lo_close.
	if code := c.simple("BEGIN"); code != "" {
		t.Fatal(code)
	}
	oid := c.call(oidLoCreat, int4(0x60000))
	fd := c.call(oidLoOpen, int4(oid), int4(0x20000))
	f.Send(&pgproto3.FunctionCall{Function: oidLoWrite, ArgFormatCodes: []uint16{1, 1}, Arguments: [][]byte{int4(fd), []byte("hello, large object")}, ResultFormatCode: 1})
	if code := c.until(nil); code != "" {
		t.Fatal(code)
	}
	c.call(oidLoClose, int4(fd))
	if code := c.simple("COMMIT"); code != "" {
		t.Fatal(code)
	}

	// Two COPYs in one string, each with its data.
	f.Send(&pgproto3.Query{String: "COPY ca FROM STDIN; COPY cb FROM STDIN"})
	copies := [][]string{{"1\n2\n"}, {"3\n", "4\n", "5\n"}}
	if code := c.until(func(m pgproto3.BackendMessage) {
		if _, ok := m.(*pgproto3.CopyInResponse); ok {
			for _, d := range copies[0] {
				f.Send(&pgproto3.CopyData{Data: []byte(d)})
			}
			copies = copies[1:]
			f.Send(&pgproto3.CopyDone{})
			if err := f.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}); code != "" || len(copies) != 0 {
		t.Fatalf("two COPYs: %q, %d left", code, len(copies))
	}
	// A COPY the server refuses before any data.
	if code := c.simple("COPY nosuch FROM STDIN"); code != "42P01" {
		t.Fatalf("COPY of a missing table: %q, want 42P01", code)
	}
	conn.Close(ctx)
	// psql's \lo_import: libpq's own fast-path calls.
	file := filepath.Join(t.TempDir(), "lo.txt")
	if err := os.WriteFile(file, []byte("from psql"), 0o600); err != nil {
		t.Fatal(err)
	}
	psql(t, a, rc, "\\lo_import '"+file+"'\n")
	rc.idle(t)
	rc.stopOK(t)
	original := pgssRows(ctx, t, a, "postgres")

	mustExec(t, b, "postgres", "SELECT pg_stat_statements_reset()")
	start := time.Now()
	code, text, res := runReplay(t, "--target", b.DSN("postgres"), "--speed", "0", "--findings=false", rc.dir)
	t.Logf("replay (%v):\n%s", time.Since(start), text)
	if res == nil {
		t.Fatalf("replay exited %d:\n%s", code, text)
	}
	replayed := pgssRows(ctx, t, b, "postgres")
	// A cancelled statement never reaches pg_stat_statements.
	for _, q := range []string{batchedQuery, cursorQuery, pipedQuery, "COPY ca FROM STDIN", "COPY cb FROM STDIN", "BEGIN", "COMMIT"} {
		fp := fingerprint.Compute(q)[0].Fingerprint
		if o, r := original[fp], replayed[fp]; o.calls == 0 || o != r {
			t.Errorf("%s: pg_stat_statements %+v on the source, %+v on the target", q, o, r)
		}
	}
	// PostgreSQL before 16 counts only the last batch's rows of a
	// portal (es_processed); 16 and later, all of them.
	if o := original[fingerprint.Compute(batchedQuery)[0].Fingerprint]; o.calls != 1 || o.rows != 0 && o.rows != 2000 {
		t.Errorf("the batched read on the source: %+v, want 1 call", o)
	}
	byFP := map[string]querystats.Row{}
	for _, q := range res.Queries {
		byFP[q.Fingerprint] = q
	}
	for query, rows := range map[string]int64{batchedQuery: 2000, cursorQuery: 1000, pipedQuery: 300} {
		if q := byFP[fingerprint.Compute(query)[0].Fingerprint]; q.Calls != 1 || q.Rows != rows || q.Answered != 1 {
			t.Errorf("the replay's %s: %d calls, %d rows, %d answered; want 1, %d, 1", query, q.Calls, q.Rows, q.Answered, rows)
		}
	}
	// Cancelled on the target too: its error is 57014, not a 5 s sleep.
	if q := byFP[fingerprint.Compute("SELECT pg_sleep(5)")[0].Fingerprint]; q.ErrorsBySQLState["57014"] != 1 {
		t.Errorf("pg_sleep on the target: errors %v, want one 57014 (cancelled as the original was)", q.ErrorsBySQLState)
	}
	if o := res.Outcomes; o.AnswerDiffers != 0 || o.FailedOnlyOnTarget != 0 || o.FailedOnlyInOriginal != 0 {
		t.Errorf("outcomes %+v: want no answer differing", o)
	}
	if s := res.Statements; s.SkippedTotal() != 0 {
		t.Errorf("statements skipped: %v, want none", s.Skipped)
	}
	m := res.Messages
	if m == nil || m.Total == 0 || m.Total != m.Used+m.SkippedTotal() || m.SkippedTotal() != 0 {
		t.Errorf("messages %+v: want every record used", m)
	}
	if want := fmt.Sprintf("  messages:   %d read, %d used, 0 skipped\n", m.Total, m.Used); !strings.Contains(text, want) {
		t.Errorf("the replay's text does not say how the capture's records were read (%q)", want)
	}
	for q, want := range map[string]string{
		"SELECT string_agg(convert_from(lo_get(oid), 'UTF8'), ',' ORDER BY oid) FROM pg_largeobject_metadata":                        "hello, large object,from psql",
		"SELECT (SELECT string_agg(x::text, ',' ORDER BY x) FROM ca) || '/' || (SELECT string_agg(x::text, ',' ORDER BY x) FROM cb)": "1,2/3,4,5",
	} {
		if got := queryLines(t, b, "postgres", q); len(got) != 1 || got[0] != want {
			t.Errorf("%s on the target: %q, want %q", q, got, want)
		}
	}

	// Onto a copy where the batched reads find nothing: their rows
	// differ, and only theirs.
	_, text, res = runReplay(t, "--target", b.DSN("changed"), "--database-map", "postgres=changed", "--speed", "0", "--findings=false", rc.dir)
	if res == nil {
		t.Fatalf("no result:\n%s", text)
	}
	for _, q := range res.Queries {
		want := map[string]int64(nil)
		if fp := q.Fingerprint; fp == fingerprint.Compute(batchedQuery)[0].Fingerprint || fp == fingerprint.Compute(cursorQuery)[0].Fingerprint ||
			fp == fingerprint.Compute(pipedQuery)[0].Fingerprint {
			want = map[string]int64{querystats.AnswerRows.String(): 1}
		}
		if !sameDiffs(q.AnswerDiffers, want) {
			t.Errorf("%s: answers differ %v, want %v", q.Query, q.AnswerDiffers, want)
		}
	}
	// The batched reads' differing answers are counted as unexplained
	// too (a fetch is compared once its last batch ran): the differing
	// answers are the explained ones plus the rest.
	explained := int64(0)
	for _, n := range res.Outcomes.AnswerDiffersExplained {
		explained += n
	}
	if o := res.Outcomes; o.AnswerDiffers == 0 || explained+o.AnswerDiffersUnexplained != o.AnswerDiffers {
		t.Errorf("answers differ %d, explained %v, unexplained %d: they do not add up", o.AnswerDiffers, o.AnswerDiffersExplained, o.AnswerDiffersUnexplained)
	}
}

func sameDiffs(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

type callRows struct{ calls, rows int64 }

// pgssRows sums pg_stat_statements' calls and rows by fingerprint.
func pgssRows(ctx context.Context, t *testing.T, c *pgcluster.Cluster, db string) map[string]callRows {
	t.Helper()
	out := map[string]callRows{}
	for _, line := range queryLines(t, c, db, "SELECT calls || ' ' || rows || ' ' || query FROM pg_stat_statements") {
		parts := strings.SplitN(line, " ", 3)
		if len(parts) != 3 {
			continue
		}
		var cr callRows
		var err error
		if cr.calls, err = strconv.ParseInt(parts[0], 10, 64); err != nil {
			t.Fatal(err)
		}
		if cr.rows, err = strconv.ParseInt(parts[1], 10, 64); err != nil {
			t.Fatal(err)
		}
		for _, it := range fingerprint.Compute(parts[2]) {
			o := out[it.Fingerprint]
			out[it.Fingerprint] = callRows{o.calls + cr.calls, o.rows + cr.rows}
		}
	}
	return out
}
