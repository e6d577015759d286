package logread

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

// syntheticLog writes about size bytes of a stderr log in the
// log_min_duration_statement style: simple statements, extended-protocol
// parse/bind/execute with parameters, multi-line statements, connections
// and errors from 16 interleaved sessions, as a busy server writes them.
func syntheticLog(size int) []byte {
	var b bytes.Buffer
	b.Grow(size + 4096)
	for i := 0; b.Len() < size; i++ {
		pid := 10000 + i%16
		ts := fmt.Sprintf("2026-11-22 08:%02d:%02d.%03d UTC", i/60000%60, i/1000%60, i%1000)
		pre := fmt.Sprintf("%s [%d] app@shop/web 6571e2a3.%x ", ts, pid, pid)
		switch i % 8 {
		case 0, 1:
			fmt.Fprintf(&b, "%sLOG:  duration: 0.%03d ms  statement: SELECT abalance FROM pgbench_accounts WHERE aid = %d\n", pre, i%1000, i)
		case 2:
			fmt.Fprintf(&b, "%sLOG:  duration: 0.020 ms  parse <unnamed>: UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2\n", pre)
			fmt.Fprintf(&b, "%sLOG:  duration: 0.011 ms  bind <unnamed>: UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2\n", pre)
			fmt.Fprintf(&b, "%sDETAIL:  parameters: $1 = '%d', $2 = '%d'\n", pre, i%5000, i)
		case 3:
			fmt.Fprintf(&b, "%sLOG:  duration: 0.%03d ms  execute <unnamed>: UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2\n", pre, i%1000)
			fmt.Fprintf(&b, "%sDETAIL:  parameters: $1 = '%d', $2 = '%d'\n", pre, i%5000, i-1)
		case 4:
			fmt.Fprintf(&b, "%sLOG:  duration: 1.%03d ms  statement: SELECT o.id, o.total\n\tFROM orders o\n\tJOIN customers c ON c.id = o.customer_id\n\tWHERE c.email = 'user%d@example.com'\n\tORDER BY o.created_at DESC LIMIT 10\n", pre, i%1000, i)
		case 5:
			fmt.Fprintf(&b, "%sLOG:  duration: 0.004 ms  execute S_1: SELECT name, price FROM items WHERE id = $1\n", pre)
			fmt.Fprintf(&b, "%sDETAIL:  parameters: $1 = '%d'\n", pre, i)
		case 6:
			if i%64 == 6 {
				fmt.Fprintf(&b, "%sERROR:  duplicate key value violates unique constraint \"items_pkey\"\n", pre)
				fmt.Fprintf(&b, "%sDETAIL:  Key (id)=(%d) already exists.\n", pre, i)
				fmt.Fprintf(&b, "%sSTATEMENT:  INSERT INTO items VALUES (%d, 'x')\n", pre, i)
			} else {
				fmt.Fprintf(&b, "%sLOG:  duration: 0.050 ms  statement: BEGIN\n", pre)
			}
		case 7:
			fmt.Fprintf(&b, "%sLOG:  duration: 0.090 ms  statement: COMMIT\n", pre)
		}
	}
	return b.Bytes()
}

const benchPrefix = "%m [%p] %q%u@%d/%a %c "

func BenchmarkStderrReader(b *testing.B) {
	data := syntheticLog(64 << 20)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(data), "bench", Options{Format: FormatStderr, Prefix: benchPrefix})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n == 0 {
			b.Fatal("no events")
		}
	}
}
