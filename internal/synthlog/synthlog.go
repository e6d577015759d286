// Package synthlog writes synthetic PostgreSQL stderr logs of any size for
// benchmarks: the mix a busy server writes with log_min_duration_statement
// = 0 (simple statements, extended-protocol parse/bind/execute with
// parameters, multi-line statements, transactions, errors) from 16
// interleaved sessions. It is deterministic, so runs compare.
package synthlog

import (
	"bufio"
	"fmt"
	"io"
)

// Prefix is the log_line_prefix of the logs Write produces.
const Prefix = "%m [%p] %q%u@%d/%a %c "

// Write writes at least size bytes of log to w, ending on a whole entry.
func Write(w io.Writer, size int64) error {
	b := bufio.NewWriterSize(w, 1<<20)
	cw := &countWriter{w: b}
	for i := 0; cw.n < size; i++ {
		pid := 10000 + i%16
		ts := fmt.Sprintf("2026-11-22 %02d:%02d:%02d.%03d UTC", i/3600000%24, i/60000%60, i/1000%60, i%1000)
		pre := fmt.Sprintf("%s [%d] app@shop/web 6571e2a3.%x ", ts, pid, pid)
		switch i % 8 {
		case 0, 1:
			fmt.Fprintf(cw, "%sLOG:  duration: 0.%03d ms  statement: SELECT abalance FROM pgbench_accounts WHERE aid = %d\n", pre, i%1000, i)
		case 2:
			fmt.Fprintf(cw, "%sLOG:  duration: 0.020 ms  parse <unnamed>: UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2\n", pre)
			fmt.Fprintf(cw, "%sLOG:  duration: 0.011 ms  bind <unnamed>: UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2\n", pre)
			fmt.Fprintf(cw, "%sDETAIL:  parameters: $1 = '%d', $2 = '%d'\n", pre, i%5000, i)
		case 3:
			fmt.Fprintf(cw, "%sLOG:  duration: 0.%03d ms  execute <unnamed>: UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2\n", pre, i%1000)
			fmt.Fprintf(cw, "%sDETAIL:  parameters: $1 = '%d', $2 = '%d'\n", pre, i%5000, i-1)
		case 4:
			fmt.Fprintf(cw, "%sLOG:  duration: 1.%03d ms  statement: SELECT o.id, o.total\n\tFROM orders o\n\tJOIN customers c ON c.id = o.customer_id\n\tWHERE c.email = 'user%d@example.com'\n\tORDER BY o.created_at DESC LIMIT 10\n", pre, i%1000, i)
		case 5:
			fmt.Fprintf(cw, "%sLOG:  duration: 0.004 ms  execute S_1: SELECT name, price FROM items WHERE id = $1\n", pre)
			fmt.Fprintf(cw, "%sDETAIL:  parameters: $1 = '%d'\n", pre, i)
		case 6:
			if i%64 == 6 {
				fmt.Fprintf(cw, "%sERROR:  duplicate key value violates unique constraint \"items_pkey\"\n", pre)
				fmt.Fprintf(cw, "%sDETAIL:  Key (id)=(%d) already exists.\n", pre, i)
				fmt.Fprintf(cw, "%sSTATEMENT:  INSERT INTO items VALUES (%d, 'x')\n", pre, i)
			} else {
				fmt.Fprintf(cw, "%sLOG:  duration: 0.050 ms  statement: BEGIN\n", pre)
			}
		case 7:
			fmt.Fprintf(cw, "%sLOG:  duration: 0.090 ms  statement: COMMIT\n", pre)
		}
		if cw.err != nil {
			return cw.err
		}
	}
	return b.Flush()
}

type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}
