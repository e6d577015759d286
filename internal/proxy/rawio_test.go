package proxy

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestStopWhileClientNotReading stops the proxy while it relays a large
// result to a client that reads none of it: the server pump, reading the
// server raw (rawio_linux.go), waits inside the read's callback for the
// client to take its write. The stop must still end every connection at
// once, not wait on the client.
func TestStopWhileClientNotReading(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	r := startProxy(t, Config{Upstream: c.DSN("postgres")})
	conn, fe := rawSession(t, r.addr)
	fe.Send(&pgproto3.Query{String: "SELECT repeat('x', 1000) FROM generate_series(1, 200000)"})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	// The result (200 MB) is far more than the sockets' buffers hold:
	// wait until a first MB went through, then until the relay stalls.
	deadline := time.Now().Add(30 * time.Second)
	for r.p.Stats().BackendBytes < 1<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("relayed %d bytes of the result after 30 s", r.p.Stats().BackendBytes)
		}
		time.Sleep(5 * time.Millisecond)
	}
	for last := int64(-1); ; {
		n := r.p.Stats().BackendBytes
		if n == last {
			break
		}
		last = n
		if time.Now().After(deadline) {
			t.Fatalf("the relay did not stall: %d bytes after 30 s", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	start := time.Now()
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("stopping took %v", d)
	}
	conn.Close()
}

// TestLoopHandsBackStalledSession relays a result larger than the
// sockets' buffers to a client that reads none of it until the relay
// stalls: the event loop's write to the client cannot go on, and it hands
// the session back to its goroutines (loop_linux.go) with the rest
// pending. The client then reads every row, and the session goes on.
func TestLoopHandsBackStalledSession(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	r := startProxy(t, Config{Upstream: c.DSN("postgres")})
	_, fe := rawSession(t, r.addr)
	const rows = 8000
	fe.Send(&pgproto3.Query{String: "SELECT repeat('x', 1000) FROM generate_series(1, 8000)"})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	// 8 MB: wait until a first MB went through, then until the relay
	// stalls on the client's full socket.
	deadline := time.Now().Add(30 * time.Second)
	for last := int64(-1); ; {
		n := r.p.Stats().BackendBytes
		if n >= 1<<20 && n == last {
			break
		}
		last = n
		if time.Now().After(deadline) {
			t.Fatalf("the relay did not stall after a MB: %d bytes after 30 s", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	got, tag := 0, ""
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatalf("after %d rows: %v", got, err)
		}
		switch m := msg.(type) {
		case *pgproto3.DataRow:
			if len(m.Values) != 1 || len(m.Values[0]) != 1000 {
				t.Fatalf("row %d: %d values", got, len(m.Values))
			}
			got++
		case *pgproto3.CommandComplete:
			tag = string(m.CommandTag)
		}
		if isReady(msg) {
			break
		}
	}
	if got != rows || tag != "SELECT 8000" {
		t.Fatalf("%d rows, tag %q; want %d, SELECT 8000", got, tag, rows)
	}
	fe.Send(&pgproto3.Query{String: "SELECT 1"})
	fe.Send(&pgproto3.Terminate{})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	receiveUntil(t, fe, isReady)
	for id, end := range checkSessions(t, r.sink.waitEnds(t, 1)) {
		if end != capture.EndTerminate {
			t.Errorf("session %d ended %v, want terminate", id, end)
		}
	}
	tags := []string{}
	for _, rec := range r.sink.records() {
		if rec.Kind == capture.KindComplete {
			tags = append(tags, rec.Tag)
		}
	}
	if len(tags) != 2 || tags[0] != "SELECT 8000" || tags[1] != "SELECT 1" {
		t.Errorf("completions recorded %q, want SELECT 8000 then SELECT 1", tags)
	}
}
