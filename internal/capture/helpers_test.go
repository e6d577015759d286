package capture

import (
	"errors"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// bind is a Bind message as the proxy forwards it: an unnamed portal, a
// named statement, three text parameters, about 100 bytes in all.
func bind() []byte {
	body := []byte("\x00stmt_lookup_customer\x00\x00\x00\x00\x03" +
		"\x00\x00\x00\x19alice.martin@example.com" +
		"\x00\x00\x00\x0842001337" +
		"\x00\x00\x00\x0a2026-11-25" +
		"\x00\x00")
	msg := []byte{'B', 0, 0, 0, 0}
	n := len(body) + 4
	msg[1], msg[2], msg[3], msg[4] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	return append(msg, body...)
}

var t0 = time.Date(2026, 11, 25, 6, 30, 0, 0, time.UTC)

// oneOfEach is a session holding every Kind once, in a plausible order.
func oneOfEach(session uint64, at int64) []Record {
	return []Record{
		{Kind: KindStartup, Session: session, Time: at, Params: []Param{{"user", "shop"}, {"database", "shop"}, {"application_name", "pgbench"}},
			ProtocolMajor: 3, ProtocolMinor: 0, TLS: true, BackendPID: 4242, ClientAddr: "10.0.0.7:53122"},
		{Kind: KindFrontend, Session: session, Time: at + 10, Msg: bind()},
		{Kind: KindComplete, Session: session, Time: at + 250, Tag: "UPDATE 3"},
		{Kind: KindError, Session: session, Time: at + 260, SQLState: "23505", Severity: "ERROR", Message: `duplicate key value violates unique constraint "customers_pkey"`},
		{Kind: KindReady, Session: session, Time: at + 270, TxStatus: 'E'},
		{Kind: KindCopyIn, Session: session, Time: at + 280},
		{Kind: KindCancel, Session: session, Time: at + 275}, // out of order: times may go back
		{Kind: KindEnd, Session: session, Time: at + 300, End: EndTerminate},
		{Kind: KindGap, Session: session, Time: at + 310, Dropped: 17},
	}
}

// sessions makes n sessions' records, interleaved as a proxy sees them.
func sessions(n int) []Record {
	var out []Record
	per := make([][]Record, n)
	for i := range per {
		per[i] = oneOfEach(uint64(i+1), t0.UnixMicro()+int64(i)*1000)
	}
	for j := range per[0] {
		for i := range per {
			out = append(out, per[i][j])
		}
	}
	return out
}

// sameRecord compares records with nil and empty slices alike.
func sameRecord(a, b *Record) bool {
	x, y := *a, *b
	if len(x.Params) == 0 {
		x.Params = nil
	}
	if len(y.Params) == 0 {
		y.Params = nil
	}
	if len(x.Msg) == 0 {
		x.Msg = nil
	}
	if len(y.Msg) == 0 {
		y.Msg = nil
	}
	return reflect.DeepEqual(x, y)
}

func writeCapture(t testing.TB, dir string, opts WriterOptions, recs []Record, end EndInfo) {
	t.Helper()
	if opts.Start.IsZero() {
		opts.Start = t0
	}
	w, err := Create(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if err := w.Write(&recs[i]); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	if err := w.Close(end); err != nil {
		t.Fatal(err)
	}
}

// readAll reads every record of path up to io.EOF or an error.
func readAll(t testing.TB, path string) ([]*Record, *Reader, error) {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		return nil, nil, err
	}
	t.Cleanup(func() { r.Close() })
	var out []*Record
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, r, nil
		}
		if err != nil {
			return out, r, err
		}
		out = append(out, rec)
	}
}

func checkRecords(t testing.TB, got []*Record, want []Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("read %d records, wrote %d", len(got), len(want))
	}
	for i := range want {
		if !sameRecord(got[i], &want[i]) {
			t.Fatalf("record %d:\n got %+v\nwant %+v", i, *got[i], want[i])
		}
	}
}

// resumedStartup is the startup of a session recorded from the middle:
// two settings, a prepared statement, and messages skipped while it was
// in a transaction.
func resumedStartup(session uint64, at int64) *Record {
	parse, err := (&pgproto3.Parse{Name: "s1", Query: "SELECT $1::int8", ParameterOIDs: []uint32{20}}).Encode(nil)
	if err != nil {
		panic(err)
	}
	return &Record{Kind: KindStartup, Session: session, Time: at, BackendPID: 77, Params: []Param{{"user", "app"}},
		ProtocolMajor: 3, ClientAddr: "127.0.0.1:5000",
		Resume: &Resume{State: []StateItem{{SQL: "SET search_path = app, public"}, {Parse: parse}, {SQL: "SET ROLE reader"}},
			Skipped: 4, SkipReason: ResumeInTransaction}}
}
