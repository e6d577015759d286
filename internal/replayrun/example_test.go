package replayrun_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/replay"
	"github.com/pgrehearse/pgrehearse/internal/replayrun"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

// A server log of two sessions (log_line_prefix '%m [%p] %u@%d/%a %c ',
// log_min_duration_statement = 0, log_connections on): three statements
// that ran, one that failed.
const serverLog = `2024-05-01 10:00:00.000 UTC [101] app@shop/psql 6631f000.65 LOG:  connection authorized: user=app database=shop application_name=psql
2024-05-01 10:00:00.100 UTC [101] app@shop/psql 6631f000.65 LOG:  duration: 1.500 ms  statement: SELECT * FROM orders WHERE id = 1
2024-05-01 10:00:00.300 UTC [101] app@shop/psql 6631f000.65 LOG:  duration: 0.300 ms  statement: DELETE FROM carts
2024-05-01 10:00:00.400 UTC [101] app@shop/psql 6631f000.65 ERROR:  syntax error at or near "SELEC" at character 1
2024-05-01 10:00:00.400 UTC [101] app@shop/psql 6631f000.65 STATEMENT:  SELEC 1
2024-05-01 10:00:00.500 UTC [102] report@shop/api 6631f000.66 LOG:  connection authorized: user=report database=shop application_name=api
2024-05-01 10:00:00.601 UTC [102] report@shop/api 6631f000.66 LOG:  duration: 0.400 ms  statement: SELECT count(*) FROM orders
2024-05-01 10:00:02.000 UTC [101] app@shop/psql 6631f000.65 LOG:  disconnection: session time: 0:00:02.000 user=app database=shop host=[local]
2024-05-01 10:00:02.100 UTC [102] report@shop/api 6631f000.66 LOG:  disconnection: session time: 0:00:01.600 user=report database=shop host=[local]
`

// writeLog writes serverLog into a new temporary directory and returns
// the file's path and the directory, for the caller to remove.
func writeLog() (path, dir string) {
	dir, err := os.MkdirTemp("", "replayrun-example")
	if err != nil {
		panic(err)
	}
	path = filepath.Join(dir, "postgresql.log")
	if err := os.WriteFile(path, []byte(serverLog), 0o600); err != nil {
		panic(err)
	}
	return path, dir
}

// Look at a log before replaying it, without connecting: the logins the
// target must take, the statements that would destroy data, and how long
// a replay at the log's pace takes. A rehearsal scans its log to know
// which databases to copy before each round.
func ExampleScan() {
	path, dir := writeLog()
	defer os.RemoveAll(dir)
	sc, err := replayrun.Scan(context.Background(), replayrun.Config{
		Input:  source.Paths{path},
		Replay: replay.Options{DryRun: true, Speed: 1},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("logins:", sc.Logins)
	fmt.Println("destructive:", sc.Destructive)
	fmt.Println("span:", sc.Span)
	// Output:
	// logins: [{app shop} {report shop}]
	// destructive: map[DELETE without WHERE:1]
	// span: 2.1s
}

// Run a replay as the replay command does, here a dry run: it reads and
// schedules the log without connecting, so every statement counts as
// executed: a dry run learns no answer, not even the syntax error the
// log shows. A replay onto a server sets Replay.Target (a connection string)
// instead, and the Outcome then holds the latencies measured.
func ExampleRun() {
	path, dir := writeLog()
	defer os.RemoveAll(dir)
	o, err := replayrun.Run(context.Background(), replayrun.Config{
		Input:        source.Paths{path},
		Replay:       replay.Options{DryRun: true, Speed: 0}, // 0: as fast as possible
		MaxSkipped:   0.1,
		MaxErrorRate: 1,
	})
	if err != nil {
		panic(err)
	}
	st := o.Result.Statements
	fmt.Printf("dry run %t, reasons %v\n", o.Result.DryRun, o.Reasons)
	fmt.Printf("sessions %d, statements %d: %d executed, %d failed\n",
		o.Result.Sessions.Total, st.Total, st.Executed, st.Failed)
	// Output:
	// dry run true, reasons []
	// sessions 2, statements 4: 4 executed, 0 failed
}

// A load twice the log's, made by fold: the log cut in two slices of
// its span (a microsecond wider, so that the last event falls in one),
// overlaid on one window, each at the log's pace. Split in
// shards, each slice is a replay of its own window, the results merged
// afterwards (Load.MergeSlices).
func ExampleLoad_Rounds() {
	first := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC).UnixMicro()
	span := 10 * time.Minute
	round := replayrun.Round{}
	l := replayrun.Load{By: results.LoadByFold, K: 2, Speed: 1}
	for _, r := range l.Rounds(round, first, span) {
		fmt.Printf("one replay at speed %v of the log folded %d times, slices of %v\n",
			r.Speed, r.Fold.K, time.Duration(r.Fold.Width)*time.Microsecond)
	}
	l.Shards = 2
	for _, r := range l.Rounds(round, first, span) {
		fmt.Printf("a replay at speed %v of %v to %v\n", r.Speed,
			time.UnixMicro(r.Window.Start).UTC().Format("15:04:05.000000"), time.UnixMicro(r.Window.End).UTC().Format("15:04:05.000000"))
	}
	fmt.Println("it lasts", l.Duration(span))
	// Output:
	// one replay at speed 1 of the log folded 2 times, slices of 5m0.000001s
	// a replay at speed 1 of 10:00:00.000000 to 10:05:00.000001
	// a replay at speed 1 of 10:05:00.000001 to 10:10:00.000002
	// it lasts 5m0s
}
