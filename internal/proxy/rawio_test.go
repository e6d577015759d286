package proxy

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

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
