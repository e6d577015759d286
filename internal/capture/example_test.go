package capture_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/wire"
)

// query is a simple-protocol Query message as a client sends it: the
// type byte, the four-byte length (itself included) and the SQL with its
// terminating zero byte.
func query(sql string) []byte {
	msg := []byte{wire.Query, 0, 0, 0, 0}
	msg = append(msg, sql...)
	msg = append(msg, 0)
	binary.BigEndian.PutUint32(msg[1:], uint32(len(msg)-1))
	return msg
}

// exampleCapture writes writeCapture's capture into a directory of its
// own, and returns it with what removes it.
func exampleCapture() (dir string, remove func()) {
	tmp, err := os.MkdirTemp("", "capture-example")
	if err != nil {
		panic(err)
	}
	dir = filepath.Join(tmp, "capture")
	if err := writeCapture(dir); err != nil {
		os.RemoveAll(tmp)
		panic(err)
	}
	return dir, func() { os.RemoveAll(tmp) }
}

// openExampleCapture opens exampleCapture's capture, as ExampleOpen
// does, and returns it with what closes and removes it.
func openExampleCapture() (*capture.Reader, func()) {
	dir, remove := exampleCapture()
	r, err := capture.Open(dir)
	if err != nil {
		remove()
		panic(err)
	}
	return r, func() { r.Close(); remove() }
}

// writeCapture writes a capture of one session that ran one query, as
// the capture proxy would record it, into dir.
func writeCapture(dir string) error {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	us := start.UnixMicro()
	w, err := capture.Create(dir, capture.WriterOptions{Start: start})
	if err != nil {
		return err
	}
	for _, r := range []capture.Record{
		{Kind: capture.KindStartup, Session: 1, Time: us, ProtocolMajor: 3,
			Params: []capture.Param{{Name: "user", Value: "shop"}, {Name: "database", Value: "shop"}}},
		{Kind: capture.KindFrontend, Session: 1, Time: us + 1000, Msg: query("SELECT count(*) FROM orders")},
		{Kind: capture.KindComplete, Session: 1, Time: us + 1250, Tag: "SELECT 1"},
		{Kind: capture.KindReady, Session: 1, Time: us + 1260, TxStatus: 'I'},
		{Kind: capture.KindEnd, Session: 1, Time: us + 2000, End: capture.EndTerminate},
	} {
		if err := w.Write(&r); err != nil {
			return err
		}
	}
	return w.Close(capture.EndInfo{Stop: start.Add(time.Second)})
}

// Read a capture back: Open a capture's directory, read its records with
// Next until io.EOF, and see from Info whether the capture is whole.
func ExampleOpen() {
	dir, remove := exampleCapture()
	defer remove()

	r, err := capture.Open(dir)
	if err != nil {
		panic(err)
	}
	defer r.Close()
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			panic(err)
		}
		fmt.Printf("session %d %-8s", rec.Session, rec.Kind)
		switch rec.Kind {
		case capture.KindStartup:
			fmt.Printf(" %d params, protocol %d.%d", len(rec.Params), rec.ProtocolMajor, rec.ProtocolMinor)
		case capture.KindFrontend:
			fmt.Printf(" %q, %d bytes", rec.Msg[0], len(rec.Msg))
		case capture.KindComplete:
			fmt.Printf(" %s", rec.Tag)
		case capture.KindReady:
			fmt.Printf(" %c", rec.TxStatus)
		case capture.KindEnd:
			fmt.Printf(" %s", rec.End)
		}
		fmt.Println()
	}
	info := r.Info()
	fmt.Printf("finalized %t, complete %t, %d session, %d records\n",
		info.Finalized, info.Complete, info.Sessions, info.Records)
	// Output:
	// session 1 startup  2 params, protocol 3.0
	// session 1 frontend 'Q', 33 bytes
	// session 1 complete SELECT 1
	// session 1 ready    I
	// session 1 end      terminate
	// finalized true, complete true, 1 session, 5 records
}

// A capture is one more source of sessions: a Decoder turns its records
// into the events a replay runs, the statement's server time taken from
// the proxy's timestamps (from the query to the ReadyForQuery that
// answered it).
func ExampleNewDecoder() {
	r, done := openExampleCapture()
	defer done()
	d := capture.NewDecoder(r)
	for ev, err := range event.All(d) {
		if err != nil {
			panic(err)
		}
		fmt.Printf("session %s %v (user %s, database %s)", ev.Session, ev.Kind, ev.User, ev.Database)
		if ev.Duration != event.NoDuration {
			fmt.Printf(" %q in %d µs", ev.Query, ev.Duration)
		}
		fmt.Println()
	}
	c := d.Counts()
	fmt.Printf("%d records, %d used, skipped %v\n", c.Total, c.Used, c.Skipped)
	// Output:
	// session c1 connect (user shop, database shop)
	// session c1 statement (user shop, database shop) "SELECT count(*) FROM orders" in 260 µs
	// session c1 disconnect (user shop, database shop)
	// 5 records, 5 used, skipped map[]
}
