package capture

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/logread"
	"github.com/pgrehearse/pgrehearse/internal/rowdigest"
)

// records is a RecordSource over a slice.
type records []*Record

func (r *records) Next() (*Record, error) {
	if len(*r) == 0 {
		return nil, io.EOF
	}
	x := (*r)[0]
	*r = (*r)[1:]
	return x, nil
}

type encoder interface{ Encode([]byte) ([]byte, error) }

func fe(t *testing.T, session uint64, at int64, m encoder) *Record {
	t.Helper()
	b, err := m.Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Record{Kind: KindFrontend, Session: session, Time: at, Msg: b}
}

// describe is an event as the test compares it: kind, query, name,
// params, duration, outcome, answer and COPY data.
func describe(ev *event.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", ev.Kind, ev.Session)
	if ev.Query != "" {
		fmt.Fprintf(&b, " %q", ev.Query)
	}
	if ev.Name != "" {
		fmt.Fprintf(&b, " name=%s", ev.Name)
	}
	for _, p := range ev.Params {
		if p.Null {
			b.WriteString(" NULL")
		} else {
			fmt.Fprintf(&b, " %q", p.Value)
		}
	}
	if w := ev.Wire(); w != nil {
		fmt.Fprintf(&b, " oids=%v formats=%v", w.ParamOIDs, w.ParamFormats)
		if w.MaxRows > 0 {
			fmt.Fprintf(&b, " max=%d", w.MaxRows)
		}
		if w.Fetch {
			b.WriteString(" fetch")
		}
		if w.NoSync {
			b.WriteString(" nosync")
		}
		if w.FunctionOID != 0 {
			fmt.Fprintf(&b, " fn=%d result=%v", w.FunctionOID, w.ResultFormats)
		}
		if w.Cancel {
			fmt.Fprintf(&b, " cancel=+%dus", w.CancelAfter)
		}
	}
	if ev.Duration != event.NoDuration {
		fmt.Fprintf(&b, " %dus", ev.Duration)
	}
	if ev.Failed {
		fmt.Fprintf(&b, " failed=%s", ev.SQLState)
	}
	if ev.Kind == event.Error {
		fmt.Fprintf(&b, " error=%s", ev.SQLState)
	}
	if a := ev.Answer(); a != nil {
		fmt.Fprintf(&b, " rows=%v", a.Rows)
		if a.Suspended {
			b.WriteString(" suspended")
		}
	}
	switch c := ev.CopyIns(); {
	case len(c) == 1 && !c[0].Failed:
		fmt.Fprintf(&b, " copy=%q", c[0].Data)
	case c != nil:
		for _, in := range c {
			fmt.Fprintf(&b, " copy=%q", in.Data)
			if in.Failed {
				b.WriteString("(failed)")
			}
		}
		if len(c) == 0 && strings.Contains(ev.Query, "COPY") {
			b.WriteString(" copy=none")
		}
	}
	return b.String()
}

func TestDecoder(t *testing.T) {
	bin := []byte{0, 0, 0, 0, 0, 0, 0, 42}
	recs := records{
		{Kind: KindStartup, Session: 1, Time: 100, BackendPID: 4242, Params: []Param{{"user", "app"}, {"database", "shop"}, {"application_name", "web"}}},
		{Kind: KindStartup, Session: 2, Time: 110, BackendPID: 4343, Params: []Param{{"user", "batch"}}},
		// A simple query string of two statements.
		fe(t, 1, 200, &pgproto3.Query{String: "BEGIN; UPDATE t SET x = 1"}),
		{Kind: KindComplete, Session: 1, Time: 210, Tag: "BEGIN"},
		{Kind: KindComplete, Session: 1, Time: 250, Tag: "UPDATE 3"},
		{Kind: KindReady, Session: 1, Time: 260, TxStatus: 'T'},
		// The unnamed statement, a binary int8 typed by the Parse.
		fe(t, 1, 300, &pgproto3.Parse{Query: "SELECT $1 + 1", ParameterOIDs: []uint32{20}}),
		fe(t, 1, 300, &pgproto3.Bind{Parameters: [][]byte{bin}, ParameterFormatCodes: []int16{1}}),
		fe(t, 1, 300, &pgproto3.Describe{ObjectType: 'P'}),
		fe(t, 1, 300, &pgproto3.Execute{}),
		fe(t, 1, 300, &pgproto3.Sync{}),
		{Kind: KindComplete, Session: 1, Time: 320, Tag: "SELECT 1"},
		{Kind: KindReady, Session: 1, Time: 321, TxStatus: 'T'},
		// A named statement, pipelined twice before one Sync, text and
		// a NULL; then a batch whose first Execute fails: the second is
		// discarded by the server.
		fe(t, 2, 400, &pgproto3.Parse{Name: "s1", Query: "SELECT * FROM t WHERE id = $1"}),
		fe(t, 2, 400, &pgproto3.Bind{PreparedStatement: "s1", Parameters: [][]byte{[]byte("7")}}),
		fe(t, 2, 400, &pgproto3.Execute{}),
		fe(t, 2, 400, &pgproto3.Bind{PreparedStatement: "s1", Parameters: [][]byte{nil}}),
		fe(t, 2, 401, &pgproto3.Execute{}),
		fe(t, 2, 401, &pgproto3.Sync{}),
		{Kind: KindComplete, Session: 2, Time: 410, Tag: "SELECT 1"},
		{Kind: KindComplete, Session: 2, Time: 420, Tag: "SELECT 0"},
		{Kind: KindReady, Session: 2, Time: 421, TxStatus: 'I'},
		fe(t, 2, 500, &pgproto3.Bind{PreparedStatement: "s1", Parameters: [][]byte{[]byte("x")}}),
		fe(t, 2, 500, &pgproto3.Execute{}),
		fe(t, 2, 500, &pgproto3.Bind{PreparedStatement: "s1", Parameters: [][]byte{[]byte("8")}}),
		fe(t, 2, 500, &pgproto3.Execute{}),
		fe(t, 2, 500, &pgproto3.Sync{}),
		{Kind: KindError, Session: 2, Time: 505, SQLState: "22P02", Severity: "ERROR", Message: "invalid input syntax for type integer"},
		{Kind: KindReady, Session: 2, Time: 506, TxStatus: 'I'},
		// COPY FROM STDIN by the simple protocol.
		fe(t, 1, 600, &pgproto3.Query{String: "COPY t FROM STDIN"}),
		{Kind: KindCopyIn, Session: 1, Time: 601},
		fe(t, 1, 602, &pgproto3.CopyData{Data: []byte("1\n2\n")}),
		fe(t, 1, 603, &pgproto3.CopyData{Data: []byte("3\n")}),
		fe(t, 1, 604, &pgproto3.CopyDone{}),
		{Kind: KindComplete, Session: 1, Time: 610, Tag: "COPY 3"},
		{Kind: KindReady, Session: 1, Time: 611, TxStatus: 'T'},
		// A fast-path call (an execution), a cancel after its answer
		// and a gap: accounted, not replayed.
		fe(t, 1, 700, &pgproto3.FunctionCall{Function: 764}),
		{Kind: KindReady, Session: 1, Time: 701, TxStatus: 'T'},
		{Kind: KindCancel, Session: 1, Time: 702},
		{Kind: KindGap, Session: 1, Time: 703, Dropped: 5},
		fe(t, 1, 800, &pgproto3.Terminate{}),
		{Kind: KindEnd, Session: 1, Time: 801, End: EndTerminate},
		// Session 2 is open at the end, with a query in flight.
		fe(t, 2, 900, &pgproto3.Query{String: "SELECT pg_sleep(60)"}),
		// A record of a session the capture never saw start.
		{Kind: KindComplete, Session: 9, Time: 901, Tag: "SELECT 1"},
	}
	total := int64(len(recs))
	d, got := decodeAll(t, &recs)
	want := []string{
		"connect c1",
		"connect c2",
		`statement c1 "BEGIN; UPDATE t SET x = 1" 60us rows=[0 3]`,
		`execute c1 "SELECT $1 + 1" "\x00\x00\x00\x00\x00\x00\x00*" oids=[20] formats=[1] 20us rows=[1]`,
		`execute c2 "SELECT * FROM t WHERE id = $1" name=s1 "7" oids=[] formats=[] nosync 10us rows=[1]`,
		`execute c2 "SELECT * FROM t WHERE id = $1" name=s1 NULL 19us rows=[0]`,
		`execute c2 "SELECT * FROM t WHERE id = $1" name=s1 "x" oids=[] formats=[] nosync 5us failed=22P02 rows=[]`,
		`statement c1 "COPY t FROM STDIN" 11us rows=[3] copy=["1\n2\n" "3\n"]`,
		`execute c1 "/* fastpath function call */ SELECT \"function 764\"()" oids=[] formats=[] fn=764 result=[0] 1us rows=[]`,
		"disconnect c1",
		`statement c2 "SELECT pg_sleep(60)"`,
	}
	checkEvents(t, got, want)
	c := d.Counts()
	skipped := skippedSum(c)
	if c.Total != total || c.Used+skipped != c.Total {
		t.Errorf("counts %+v: total %d, used+skipped %d, want %d", c, c.Total, c.Used+skipped, total)
	}
	checkSkipped(t, c, map[MessageSkip]int64{SkipDiscarded: 1, SkipFunctionCall: 0, SkipCancel: 1, SkipGap: 1, SkipUnknownSession: 1})
	if c.Dropped != 5 || c.OpenSessions != 1 {
		t.Errorf("dropped %d, open %d; want 5, 1", c.Dropped, c.OpenSessions)
	}
	if len(d.Warnings()) != 2 {
		t.Errorf("warnings: %q", d.Warnings())
	}
}

// TestDecoderPipelinedQueries: a client may send several simple Query
// messages without waiting for the first's ReadyForQuery; the server
// answers them in order, each up to its own ReadyForQuery. Each is one
// statement, with its own answer, error and COPY data: none is lost.
func TestDecoderPipelinedQueries(t *testing.T) {
	recs := records{
		{Kind: KindStartup, Session: 1, Time: 100, Params: []Param{{Name: "user", Value: "app"}}},
		fe(t, 1, 200, &pgproto3.Query{String: "UPDATE t SET x = 1"}),
		fe(t, 1, 201, &pgproto3.Query{String: "SELECT 1 / 0"}),
		fe(t, 1, 202, &pgproto3.Query{String: "COPY t FROM STDIN"}),
		fe(t, 1, 203, &pgproto3.Query{String: "SELECT 2"}),
		{Kind: KindComplete, Session: 1, Time: 210, Tag: "UPDATE 3"},
		{Kind: KindReady, Session: 1, Time: 211, TxStatus: 'I'},
		{Kind: KindError, Session: 1, Time: 220, SQLState: "22012", Severity: "ERROR", Message: "division by zero"},
		{Kind: KindReady, Session: 1, Time: 221, TxStatus: 'I'},
		{Kind: KindCopyIn, Session: 1, Time: 230},
		fe(t, 1, 231, &pgproto3.CopyData{Data: []byte("1\n")}),
		fe(t, 1, 232, &pgproto3.CopyDone{}),
		{Kind: KindComplete, Session: 1, Time: 240, Tag: "COPY 1"},
		{Kind: KindReady, Session: 1, Time: 241, TxStatus: 'I'},
		{Kind: KindComplete, Session: 1, Time: 250, Tag: "SELECT 1"},
		{Kind: KindReady, Session: 1, Time: 251, TxStatus: 'I'},
		fe(t, 1, 300, &pgproto3.Query{String: "SELECT 3"}),
		fe(t, 1, 301, &pgproto3.Query{String: "SELECT 4"}),
		{Kind: KindComplete, Session: 1, Time: 310, Tag: "SELECT 1"},
		{Kind: KindReady, Session: 1, Time: 311, TxStatus: 'I'},
		// The capture stops with the second in flight.
	}
	d, got := decodeAll(t, &recs)
	want := []string{
		"connect c1",
		`statement c1 "UPDATE t SET x = 1" 11us rows=[3]`,
		`statement c1 "SELECT 1 / 0" 20us failed=22012 rows=[]`,
		`statement c1 "COPY t FROM STDIN" 39us rows=[1] copy=["1\n"]`,
		`statement c1 "SELECT 2" 48us rows=[1]`,
		`statement c1 "SELECT 3" 11us rows=[1]`,
		`statement c1 "SELECT 4"`,
	}
	checkEvents(t, got, want)
	if c := d.Counts(); c.Used != c.Total {
		t.Errorf("counts %+v: want every record used", c)
	}
}

// checkEvents compares the events described with those wanted.
func checkEvents(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// skippedSum is how many records c counts as skipped, for any reason.
func skippedSum(c MessageCounts) int64 {
	var skipped int64
	for _, n := range c.Skipped {
		skipped += n
	}
	return skipped
}

// checkSkipped compares c's skipped records with those wanted, by reason.
func checkSkipped(t *testing.T, c MessageCounts, want map[MessageSkip]int64) {
	t.Helper()
	for why, n := range want {
		if c.Skipped[why] != n {
			t.Errorf("skipped %s: %d, want %d (%v)", why, c.Skipped[why], n, c.Skipped)
		}
	}
}

// decodeAll decodes every record of recs and describes each event.
func decodeAll(t *testing.T, recs *records) (*Decoder, []string) {
	t.Helper()
	d := NewDecoder(recs)
	var got []string
	for ev, err := range event.All(d) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, describe(ev))
	}
	return d, got
}

// TestDecoderSessionEnds: a session refused at authentication (its
// startup has no backend, and its end says so) makes no event, as a log
// has no session for it; a session the capture ended as open is replayed
// without an end and counted open; an answer to an Execute that made no
// event, and a damaged gap count, are skipped, not used.
func TestDecoderSessionEnds(t *testing.T) {
	recs := records{
		{Kind: KindStartup, Session: 1, Time: 100, Params: []Param{{Name: "user", Value: "intruder"}}},
		{Kind: KindEnd, Session: 1, Time: 101, End: EndAuthFailed},
		{Kind: KindStartup, Session: 2, Time: 110, BackendPID: 7, Params: []Param{{Name: "user", Value: "app"}}},
		// An Execute of a statement whose Parse the capture lacks, and
		// the server's answer to it.
		fe(t, 2, 120, &pgproto3.Bind{PreparedStatement: "lost"}),
		fe(t, 2, 121, &pgproto3.Execute{}),
		fe(t, 2, 122, &pgproto3.Sync{}),
		{Kind: KindComplete, Session: 2, Time: 130, Tag: "SELECT 1"},
		{Kind: KindReady, Session: 2, Time: 131, TxStatus: 'I'},
		{Kind: KindGap, Session: 2, Time: 132, Dropped: -5},
		fe(t, 2, 140, &pgproto3.Query{String: "SELECT 1"}),
		{Kind: KindComplete, Session: 2, Time: 150, Tag: "SELECT 1"},
		{Kind: KindReady, Session: 2, Time: 151, TxStatus: 'I'},
		{Kind: KindEnd, Session: 2, Time: 160, End: EndOpen},
	}
	total := int64(len(recs))
	d, got := decodeAll(t, &recs)
	want := []string{"connect c2", `statement c2 "SELECT 1" 11us rows=[1]`}
	checkEvents(t, got, want)
	c := d.Counts()
	skipped := skippedSum(c)
	if c.Total != total || c.Used+skipped != c.Total {
		t.Errorf("counts %+v: want %d records, used or skipped", c, total)
	}
	checkSkipped(t, c, map[MessageSkip]int64{SkipAuthFailed: 2, SkipUnknownStatement: 2, SkipUnmatched: 1, SkipMalformed: 1})
	if c.OpenSessions != 1 || c.Dropped != 0 {
		t.Errorf("open %d, dropped %d: want 1 open, nothing dropped", c.OpenSessions, c.Dropped)
	}
}

// TestDecoderStartupSettings: what a client set in its startup packet,
// besides its user, database and application name, is on its Connect
// for the replay to set too; a replication connection's flag is not.
func TestDecoderStartupSettings(t *testing.T) {
	recs := records{
		{Kind: KindStartup, Session: 1, Time: 100, BackendPID: 7, Params: []Param{{"user", "app"}, {"database", "shop"},
			{"application_name", "web"}, {"options", "-c search_path=s2"}, {"DateStyle", "ISO, DMY"}, {"replication", "false"}}},
	}
	ev, err := NewDecoder(&recs).Next()
	if err != nil {
		t.Fatal(err)
	}
	want := []event.Setting{{Name: "options", Value: "-c search_path=s2"}, {Name: "DateStyle", Value: "ISO, DMY"}}
	if !slices.Equal(ev.Startup(), want) || ev.User != "app" || ev.Database != "shop" || ev.Application != "web" {
		t.Errorf("connect %+v, startup %v: want %v", ev, ev.Startup(), want)
	}
}

// TestDecoderResumedSession: the startup of a session recorded from the
// middle gives its Connect the SQL of its state as a preamble, and its
// prepared statements to the session, so that an Execute of one carries
// its query and parameter types; its counts say so, with the messages it
// skipped before its first idle point. A session recorded from its start
// has no preamble.
func TestDecoderResumedSession(t *testing.T) {
	recs := records{
		resumedStartup(1, 100),
		{Kind: KindStartup, Session: 2, Time: 101, BackendPID: 8, Params: []Param{{"user", "app"}}},
		fe(t, 1, 200, &pgproto3.Bind{PreparedStatement: "s1", Parameters: [][]byte{[]byte("42")}}),
		fe(t, 1, 200, &pgproto3.Execute{}),
		fe(t, 1, 201, &pgproto3.Sync{}),
		{Kind: KindComplete, Session: 1, Time: 210, Tag: "SELECT 1"},
		{Kind: KindReady, Session: 1, Time: 211, TxStatus: 'I'},
	}
	d := NewDecoder(&recs)
	var evs []*event.Event
	for ev, err := range event.All(d) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	if len(evs) != 3 || evs[0].Kind != event.Connect || evs[1].Kind != event.Connect || evs[2].Kind != event.Execute {
		t.Fatalf("events %v: want two connects and the execution", evs)
	}
	if got := evs[0].Preamble(); !evs[0].Resumed() || !slices.Equal(got, []string{"SET search_path = app, public", "SET ROLE reader"}) {
		t.Errorf("preamble %q: want the settings, in order", got)
	}
	if evs[1].Resumed() || evs[1].Preamble() != nil {
		t.Errorf("a session recorded from its start has preamble %q", evs[1].Preamble())
	}
	if ex := evs[2]; ex.Query != "SELECT $1::int8" || ex.Name != "s1" || ex.Wire() == nil || !slices.Equal(ex.Wire().ParamOIDs, []uint32{20}) {
		t.Errorf("execution %q of %q, wire %+v: want the statement prepared before the recording", ex.Query, ex.Name, ex.Wire())
	}
	c := d.Counts()
	if c.ResumedSessions != 1 || c.Preamble != 3 || c.BeforeRecording[string(ResumeInTransaction)] != 4 || len(c.Skipped) != 0 || c.Total != c.Used {
		t.Errorf("counts %+v: want 1 session from the middle, 3 preamble items, 4 messages skipped before, every record used", c)
	}
}

// TestDecoderDigests: the rows' digests of a statement's completes are
// its answer's, in order, with their version (a record that says none is
// of the current one); a capture written before them (completes without
// one) gives none, so nothing is compared by value, and so do digests of
// two versions in one answer.
func TestDecoderDigests(t *testing.T) {
	one, two := rowdigest.Digest{Rows: 1, Ordered: 1, Unordered: 1}, rowdigest.Digest{Rows: 2, Ordered: 2, Unordered: 3}
	recs := records{
		{Kind: KindStartup, Session: 1, Time: 100, BackendPID: 4242, Params: []Param{{"user", "app"}}},
		fe(t, 1, 200, &pgproto3.Query{String: "SELECT 1; SELECT 1 UNION SELECT 2"}),
		{Kind: KindComplete, Session: 1, Time: 210, Tag: "SELECT 1", Digest: one, HasDigest: true},
		{Kind: KindComplete, Session: 1, Time: 220, Tag: "SELECT 2", Digest: two, HasDigest: true},
		{Kind: KindReady, Session: 1, Time: 230, TxStatus: 'I'},
		fe(t, 1, 300, &pgproto3.Query{String: "SELECT 1"}),
		{Kind: KindComplete, Session: 1, Time: 310, Tag: "SELECT 1"},
		{Kind: KindReady, Session: 1, Time: 320, TxStatus: 'I'},
		fe(t, 1, 400, &pgproto3.Query{String: "SELECT 1; SELECT 1 UNION SELECT 2"}),
		{Kind: KindComplete, Session: 1, Time: 410, Tag: "SELECT 1", Digest: one, HasDigest: true, DigestVersion: rowdigest.V1},
		{Kind: KindComplete, Session: 1, Time: 420, Tag: "SELECT 2", Digest: two, HasDigest: true, DigestVersion: rowdigest.V1},
		{Kind: KindReady, Session: 1, Time: 430, TxStatus: 'I'},
		fe(t, 1, 500, &pgproto3.Query{String: "SELECT 1; SELECT 1 UNION SELECT 2"}),
		{Kind: KindComplete, Session: 1, Time: 510, Tag: "SELECT 1", Digest: one, HasDigest: true, DigestVersion: rowdigest.V1},
		{Kind: KindComplete, Session: 1, Time: 520, Tag: "SELECT 2", Digest: two, HasDigest: true, DigestVersion: rowdigest.V2},
		{Kind: KindReady, Session: 1, Time: 530, TxStatus: 'I'},
	}
	d := NewDecoder(&recs)
	var got [][]rowdigest.Digest
	var versions []rowdigest.Version
	for ev, err := range event.All(d) {
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.Answer(); a != nil {
			got, versions = append(got, a.Digests), append(versions, a.DigestVersion)
		}
	}
	both := []rowdigest.Digest{one, two}
	if len(got) != 4 || !slices.Equal(got[0], both) || got[1] != nil || !slices.Equal(got[2], both) || got[3] != nil {
		t.Errorf("digests %v: want %v, none, %v, none", got, both, both)
	}
	if len(versions) != 4 || versions[0] != rowdigest.Current || versions[2] != rowdigest.V1 {
		t.Errorf("versions %v: want the current one, then V1 third", versions)
	}
}

// TestDecoderProtocolForms: the forms a replay sends as the application
// did. A portal read 2 rows at a time, with the server's PortalSuspended
// recorded (an empty tag) and, in an older capture, without it; a
// CancelRequest while a statement ran; two COPYs in one string, each
// with its data; a COPY the server refused before any data; a COPY the
// client failed; fast-path calls with binary arguments.
func TestDecoderProtocolForms(t *testing.T) {
	four := []byte{0, 0, 0, 4}
	recs := records{
		{Kind: KindStartup, Session: 1, Time: 100, BackendPID: 4242, Params: []Param{{"user", "app"}}},
		fe(t, 1, 200, &pgproto3.Parse{Name: "S_1", Query: "SELECT g FROM t"}),
		fe(t, 1, 200, &pgproto3.Bind{PreparedStatement: "S_1", DestinationPortal: "C_1"}),
		fe(t, 1, 200, &pgproto3.Describe{ObjectType: 'P', Name: "C_1"}),
		fe(t, 1, 200, &pgproto3.Execute{Portal: "C_1", MaxRows: 2}),
		fe(t, 1, 200, &pgproto3.Sync{}),
		{Kind: KindComplete, Session: 1, Time: 210, Tag: SuspendedTag},
		{Kind: KindReady, Session: 1, Time: 211, TxStatus: 'T'},
		fe(t, 1, 300, &pgproto3.Execute{Portal: "C_1", MaxRows: 2}),
		fe(t, 1, 300, &pgproto3.Sync{}),
		// No PortalSuspended record: an older capture.
		{Kind: KindReady, Session: 1, Time: 305, TxStatus: 'T'},
		fe(t, 1, 400, &pgproto3.Execute{Portal: "C_1", MaxRows: 2}),
		fe(t, 1, 400, &pgproto3.Sync{}),
		{Kind: KindComplete, Session: 1, Time: 405, Tag: "SELECT 1"},
		{Kind: KindReady, Session: 1, Time: 406, TxStatus: 'T'},
		// A cursor read with Flush, Sync only at its end (pg-cursor).
		fe(t, 1, 500, &pgproto3.Bind{PreparedStatement: "S_1", DestinationPortal: "C_2"}),
		fe(t, 1, 500, &pgproto3.Execute{Portal: "C_2", MaxRows: 2}),
		fe(t, 1, 500, &pgproto3.Flush{}),
		{Kind: KindComplete, Session: 1, Time: 510, Tag: SuspendedTag},
		fe(t, 1, 520, &pgproto3.Execute{Portal: "C_2", MaxRows: 2}),
		fe(t, 1, 520, &pgproto3.Flush{}),
		{Kind: KindComplete, Session: 1, Time: 530, Tag: "SELECT 1"},
		fe(t, 1, 540, &pgproto3.Close{ObjectType: 'P', Name: "C_2"}),
		fe(t, 1, 540, &pgproto3.Sync{}),
		{Kind: KindReady, Session: 1, Time: 541, TxStatus: 'I'},
		// Two batches pipelined before one Sync.
		fe(t, 1, 600, &pgproto3.Bind{PreparedStatement: "S_1", DestinationPortal: "C_3"}),
		fe(t, 1, 600, &pgproto3.Execute{Portal: "C_3", MaxRows: 2}),
		fe(t, 1, 600, &pgproto3.Execute{Portal: "C_3", MaxRows: 2}),
		fe(t, 1, 600, &pgproto3.Sync{}),
		{Kind: KindComplete, Session: 1, Time: 610, Tag: SuspendedTag},
		{Kind: KindComplete, Session: 1, Time: 620, Tag: "SELECT 1"},
		{Kind: KindReady, Session: 1, Time: 621, TxStatus: 'I'},
		// Cancelled 500 ms after it was sent.
		fe(t, 1, 1_000_000, &pgproto3.Query{String: "SELECT pg_sleep(5)"}),
		{Kind: KindCancel, Session: 1, Time: 1_500_000},
		{Kind: KindError, Session: 1, Time: 1_500_100, SQLState: "57014", Severity: "ERROR", Message: "canceling statement due to user request"},
		{Kind: KindReady, Session: 1, Time: 1_500_101, TxStatus: 'I'},
		// Two COPYs in one string.
		fe(t, 1, 2_000_000, &pgproto3.Query{String: "COPY a FROM STDIN; COPY b FROM STDIN"}),
		{Kind: KindCopyIn, Session: 1, Time: 2_000_001},
		fe(t, 1, 2_000_002, &pgproto3.CopyData{Data: []byte("1\n")}),
		fe(t, 1, 2_000_003, &pgproto3.CopyDone{}),
		{Kind: KindComplete, Session: 1, Time: 2_000_004, Tag: "COPY 1"},
		{Kind: KindCopyIn, Session: 1, Time: 2_000_005},
		fe(t, 1, 2_000_006, &pgproto3.CopyData{Data: []byte("2\n")}),
		fe(t, 1, 2_000_006, &pgproto3.CopyData{Data: []byte("3\n")}),
		fe(t, 1, 2_000_007, &pgproto3.CopyDone{}),
		{Kind: KindComplete, Session: 1, Time: 2_000_008, Tag: "COPY 2"},
		{Kind: KindReady, Session: 1, Time: 2_000_009, TxStatus: 'I'},
		// Refused before any data.
		fe(t, 1, 3_000_000, &pgproto3.Query{String: "COPY missing FROM STDIN"}),
		{Kind: KindError, Session: 1, Time: 3_000_001, SQLState: "42P01", Severity: "ERROR", Message: "relation does not exist"},
		{Kind: KindReady, Session: 1, Time: 3_000_002, TxStatus: 'I'},
		// Failed by the client.
		fe(t, 1, 4_000_000, &pgproto3.Query{String: "COPY a FROM STDIN"}),
		{Kind: KindCopyIn, Session: 1, Time: 4_000_001},
		fe(t, 1, 4_000_002, &pgproto3.CopyData{Data: []byte("4\n")}),
		fe(t, 1, 4_000_003, &pgproto3.CopyFail{Message: "interrupted"}),
		{Kind: KindError, Session: 1, Time: 4_000_004, SQLState: "57014", Severity: "ERROR", Message: "COPY from stdin failed"},
		{Kind: KindReady, Session: 1, Time: 4_000_005, TxStatus: 'I'},
		// lo_creat(INV_READ|INV_WRITE), then lo_open(16385, INV_WRITE)
		// of the object it made: sent as lo_create(16385); then a
		// user function's call, which failed.
		fe(t, 1, 4_900_000, &pgproto3.FunctionCall{Function: 957, ArgFormatCodes: []uint16{1}, Arguments: [][]byte{{0, 6, 0, 0}}, ResultFormatCode: 1}),
		{Kind: KindReady, Session: 1, Time: 4_900_001, TxStatus: 'T'},
		fe(t, 1, 5_000_000, &pgproto3.FunctionCall{Function: 952, ArgFormatCodes: []uint16{1}, Arguments: [][]byte{{0, 0, 0x40, 1}, {0, 2, 0, 0}}, ResultFormatCode: 1}),
		{Kind: KindReady, Session: 1, Time: 5_000_001, TxStatus: 'T'},
		fe(t, 1, 5_000_010, &pgproto3.FunctionCall{Function: 16500, Arguments: [][]byte{four}}),
		{Kind: KindError, Session: 1, Time: 5_000_011, SQLState: "42883", Severity: "ERROR", Message: "function does not exist"},
		{Kind: KindReady, Session: 1, Time: 5_000_012, TxStatus: 'E'},
		// A cancel with nothing in flight.
		{Kind: KindCancel, Session: 1, Time: 5_000_020},
	}
	total := int64(len(recs))
	d, got := decodeAll(t, &recs)
	want := []string{
		"connect c1",
		`execute c1 "SELECT g FROM t" name=S_1 oids=[] formats=[] max=2 10us rows=[2] suspended`,
		`execute c1 "SELECT g FROM t" name=S_1 oids=[] formats=[] max=2 fetch 5us rows=[2] suspended`,
		`execute c1 "SELECT g FROM t" name=S_1 oids=[] formats=[] max=2 fetch 5us rows=[1]`,
		`execute c1 "SELECT g FROM t" name=S_1 oids=[] formats=[] max=2 nosync 10us rows=[2] suspended`,
		`execute c1 "SELECT g FROM t" name=S_1 oids=[] formats=[] max=2 fetch nosync 10us rows=[1]`,
		`execute c1 "SELECT g FROM t" name=S_1 oids=[] formats=[] max=2 nosync 10us rows=[2] suspended`,
		`execute c1 "SELECT g FROM t" name=S_1 oids=[] formats=[] max=2 fetch 20us rows=[1]`,
		`statement c1 "SELECT pg_sleep(5)" oids=[] formats=[] cancel=+500000us 500101us failed=57014 rows=[]`,
		`statement c1 "COPY a FROM STDIN; COPY b FROM STDIN" 9us rows=[1 2] copy=["1\n"] copy=["2\n" "3\n"]`,
		`statement c1 "COPY missing FROM STDIN" 2us failed=42P01 rows=[] copy=none`,
		`statement c1 "COPY a FROM STDIN" 5us failed=57014 rows=[] copy=["4\n"](failed)`,
		`execute c1 "/* fastpath function call */ SELECT pg_catalog.lo_creat($1)" "\x00\x00@\x01" oids=[] formats=[1] fn=715 result=[1] 1us rows=[]`,
		`execute c1 "/* fastpath function call */ SELECT pg_catalog.lo_open($1, $2)" "\x00\x00@\x01" "\x00\x02\x00\x00" oids=[] formats=[1] fn=952 result=[1] 1us rows=[]`,
		`execute c1 "/* fastpath function call */ SELECT \"function 16500\"($1)" "\x00\x00\x00\x04" oids=[] formats=[] fn=16500 result=[0] 2us failed=42883 rows=[]`,
	}
	checkEvents(t, got, want)
	c := d.Counts()
	skipped := skippedSum(c)
	if c.Total != total || c.Used+skipped != c.Total || c.Skipped[SkipCancel] != 1 || skipped != 1 {
		t.Errorf("counts %+v: want %d records, all used but the cancel with nothing in flight", c, total)
	}
}

// TestFastPathText: a fast-path call from a capture reads as the same
// call from a log's fast-path line, so that both have one fingerprint.
func TestFastPathText(t *testing.T) {
	if fastPathPrefix != logread.FastPathPrefix {
		t.Errorf("prefix %q, logread's %q", fastPathPrefix, logread.FastPathPrefix)
	}
	d := NewDecoder(nil)
	for oid, name := range builtinFunctions {
		want := logread.FastPathQuery(name)
		m := &pgproto3.FunctionCall{Function: oid, Arguments: make([][]byte, strings.Count(want, "$"))}
		if got := d.functionCall(&capSession{id: "c1"}, m, 0).Query; got != want {
			t.Errorf("%d: %q, a log's %q", oid, got, want)
		}
	}
}

// TestDecoderPipelinedMixed: a client pipelines a Query, an extended
// batch, a Query, and two more extended batches (the first of them
// failing), each ended by its own Sync, before the first answer. The
// server answers them in the order they came, and each gets its own
// answer: the second Query is not given the batch's UPDATE count, the
// batch is not ended by the first Query's ReadyForQuery, and the failure
// discards the rest of its own batch only.
func TestDecoderPipelinedMixed(t *testing.T) {
	recs := records{
		{Kind: KindStartup, Session: 1, Time: 100, Params: []Param{{Name: "user", Value: "app"}}},
		fe(t, 1, 200, &pgproto3.Query{String: "SELECT count(*) FROM items"}),
		fe(t, 1, 201, &pgproto3.Parse{Name: "up", Query: "UPDATE items SET name = $1 WHERE id = $2"}),
		fe(t, 1, 202, &pgproto3.Bind{PreparedStatement: "up", Parameters: [][]byte{[]byte("a"), []byte("7")}}),
		fe(t, 1, 203, &pgproto3.Execute{}),
		fe(t, 1, 204, &pgproto3.Sync{}),
		fe(t, 1, 205, &pgproto3.Query{String: "SET statement_timeout = '2s'"}),
		fe(t, 1, 206, &pgproto3.Bind{PreparedStatement: "up", Parameters: [][]byte{[]byte("b"), []byte("x")}}),
		fe(t, 1, 207, &pgproto3.Execute{}),
		fe(t, 1, 208, &pgproto3.Bind{PreparedStatement: "up", Parameters: [][]byte{[]byte("c"), []byte("8")}}),
		fe(t, 1, 209, &pgproto3.Execute{}),
		fe(t, 1, 210, &pgproto3.Sync{}),
		fe(t, 1, 211, &pgproto3.Bind{PreparedStatement: "up", Parameters: [][]byte{[]byte("d"), []byte("9")}}),
		fe(t, 1, 212, &pgproto3.Execute{}),
		fe(t, 1, 213, &pgproto3.Sync{}),
		{Kind: KindComplete, Session: 1, Time: 220, Tag: "SELECT 1"},
		{Kind: KindReady, Session: 1, Time: 221, TxStatus: 'I'},
		{Kind: KindComplete, Session: 1, Time: 230, Tag: "UPDATE 1"},
		{Kind: KindReady, Session: 1, Time: 231, TxStatus: 'I'},
		{Kind: KindComplete, Session: 1, Time: 240, Tag: "SET"},
		{Kind: KindReady, Session: 1, Time: 241, TxStatus: 'I'},
		{Kind: KindError, Session: 1, Time: 250, SQLState: "22P02", Severity: "ERROR", Message: "invalid input syntax for type integer"},
		{Kind: KindReady, Session: 1, Time: 251, TxStatus: 'I'},
		{Kind: KindComplete, Session: 1, Time: 260, Tag: "UPDATE 0"},
		{Kind: KindReady, Session: 1, Time: 261, TxStatus: 'I'},
	}
	d, got := decodeAll(t, &recs)
	want := []string{
		"connect c1",
		`statement c1 "SELECT count(*) FROM items" 21us rows=[1]`,
		`execute c1 "UPDATE items SET name = $1 WHERE id = $2" name=up "a" "7" 27us rows=[1]`,
		`statement c1 "SET statement_timeout = '2s'" 36us rows=[0]`,
		`execute c1 "UPDATE items SET name = $1 WHERE id = $2" name=up "b" "x" oids=[] formats=[] nosync 43us failed=22P02 rows=[]`,
		`execute c1 "UPDATE items SET name = $1 WHERE id = $2" name=up "d" "9" 48us rows=[0]`,
	}
	checkEvents(t, got, want)
	if c := d.Counts(); c.Used+c.Skipped[SkipDiscarded] != c.Total || c.Skipped[SkipDiscarded] != 1 {
		t.Errorf("counts %+v: want every record used but the discarded Execute", c)
	}
}

// TestDecoderGapRealigns: records of a pipelined session are dropped
// (its ReadyForQuery among them). What was in flight at the gap is
// yielded without an answer, and the statements after it get their own
// answers, not the ones the lost records would have shifted onto them.
func TestDecoderGapRealigns(t *testing.T) {
	recs := records{
		{Kind: KindStartup, Session: 1, Time: 100, Params: []Param{{Name: "user", Value: "app"}}},
		fe(t, 1, 200, &pgproto3.Query{String: "SELECT 1"}),
		fe(t, 1, 201, &pgproto3.Query{String: "SELECT 2"}),
		{Kind: KindComplete, Session: 1, Time: 210, Tag: "SELECT 1"},
		{Kind: KindGap, Session: 1, Time: 215, Dropped: 3},
		fe(t, 1, 300, &pgproto3.Query{String: "UPDATE t SET x = 1"}),
		{Kind: KindComplete, Session: 1, Time: 310, Tag: "UPDATE 5"},
		{Kind: KindReady, Session: 1, Time: 311, TxStatus: 'I'},
	}
	_, got := decodeAll(t, &recs)
	want := []string{
		"connect c1",
		`statement c1 "SELECT 1"`,
		`statement c1 "SELECT 2"`,
		`statement c1 "UPDATE t SET x = 1" 11us rows=[5]`,
	}
	checkEvents(t, got, want)
}

// TestDecoderStartupOnly: a capture that stops while its one session is
// logging in (its startup has no backend yet, and no end follows) counts
// that record as used, with the session open: the counts add up.
func TestDecoderStartupOnly(t *testing.T) {
	recs := records{{Kind: KindStartup, Session: 1, Time: 100, Params: []Param{{Name: "user", Value: "app"}}}}
	d, got := decodeAll(t, &recs)
	if strings.Join(got, "\n") != "connect c1" {
		t.Errorf("events %q, want the session's connect", got)
	}
	if c := d.Counts(); c.Total != 1 || c.Used != 1 || c.OpenSessions != 1 {
		t.Errorf("counts %+v: want the startup used, the session open", c)
	}
}

// TestDecoderErrorOutsideStatement: the error of a Parse the client never
// executed (psql's \gdesc on an incomplete query: Parse, Describe, Sync)
// is an Error event outside any statement, while a failed execution
// carries its error on its own event and makes no Error event: errors add
// up to failed statements plus those outside.
func TestDecoderErrorOutsideStatement(t *testing.T) {
	recs := records{
		{Kind: KindStartup, Session: 1, Time: 100, BackendPID: 4242, Params: []Param{{"user", "app"}, {"database", "shop"}}},
		fe(t, 1, 200, &pgproto3.Parse{Query: "SELECT 1 +"}),
		fe(t, 1, 200, &pgproto3.Describe{ObjectType: 'S'}),
		fe(t, 1, 200, &pgproto3.Sync{}),
		{Kind: KindError, Session: 1, Time: 205, SQLState: "42601", Severity: "ERROR", Message: "syntax error at end of input"},
		{Kind: KindReady, Session: 1, Time: 206, TxStatus: 'I'},
		fe(t, 1, 300, &pgproto3.Query{String: "SELECT 1/0"}),
		{Kind: KindError, Session: 1, Time: 305, SQLState: "22012", Severity: "ERROR", Message: "division by zero"},
		{Kind: KindReady, Session: 1, Time: 306, TxStatus: 'I'},
	}
	d := NewDecoder(&recs)
	var errs, outside, failed int
	for ev, err := range event.All(d) {
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case ev.Kind == event.Error:
			errs++
			if !ev.OutsideStatement() || ev.SQLState != "42601" {
				t.Errorf("error event %s outside=%v, want 42601 outside any statement", describe(ev), ev.OutsideStatement())
			}
			if ev.OutsideStatement() {
				outside++
			}
		case ev.Failed:
			failed++
			if ev.SQLState != "22012" || ev.OutsideStatement() {
				t.Errorf("failed execution %s outside=%v", describe(ev), ev.OutsideStatement())
			}
		}
	}
	if errs != 1 || outside != 1 || failed != 1 {
		t.Errorf("%d error events (%d outside any statement), %d failed executions; want 1 (1), 1", errs, outside, failed)
	}
}
