// Command pgrehearse rehearses a PostgreSQL workload: it reads production
// traffic from server logs, replays it against a target server and reports
// what got slower. All the work is done in internal packages; this file
// only wires the process to them.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/pgrehearse/pgrehearse/internal/cli"
)

func main() {
	tuneGC()
	// A closed pipe on standard output (pgrehearse analyze ... | head)
	// must not kill the process before it has written its --json file:
	// writes then fail with EPIPE, which the CLI treats as a reader that
	// went away.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, cli.IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}
