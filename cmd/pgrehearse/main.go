// Command pgrehearse rehearses a PostgreSQL workload: it reads production
// traffic from server logs, replays it against a target server and reports
// what got slower. All the work is done in internal packages; this file
// only wires the process to them.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/pgrehearse/pgrehearse/internal/cli"
)

func main() {
	if os.Getenv("GOGC") == "" {
		// The live heap is small (a few read buffers and per-query
		// statistics) while reading allocates quickly: collecting less
		// often costs tens of MB and doubles the reading speed.
		debug.SetGCPercent(400)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, cli.IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}
