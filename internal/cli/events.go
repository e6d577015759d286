package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/replayrun"
	"github.com/pgrehearse/pgrehearse/internal/report"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

func newEventsCmd(ctx context.Context, stdio IO) *cobra.Command {
	var lf logFlags
	var count, showParams bool
	var maxSkipped float64
	var startFlag, endFlag string
	cmd := &cobra.Command{
		Use:   "events [flags] LOG|CAPTURE...",
		Short: "Print the events the log reader finds in PostgreSQL logs",
		Long: `events prints, one JSON object per line, what the log reader makes of each
log: sessions connecting and disconnecting, statements, extended-protocol
executions with their parameters, and errors. Use it to check what a replay
would send, or --count to only count (the log reader's speed, in bench/parse.sh).

Parameter values are left out, and the constants of query texts replaced by
$1, $2... (as pg_stat_statements shows them), unless --show-params is given:
they may hold personal data and passwords (ALTER ROLE ... PASSWORD '...').
The plans the server logged (auto_explain) are shown by their format, with
their text, which holds the statement's constants, only with --show-params.
` + captureHelp + exitHelp(exitDocNoInput, exitDocInputCut),
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if maxSkipped < 0 || maxSkipped > 100 {
				return usageError("--max-skipped is a percentage between 0 and 100, got %v", maxSkipped)
			}
			start, end, err := timeWindow(startFlag, endFlag)
			if err != nil {
				return err
			}
			return runEvents(cmd.Context(), stdio, args, lf, count, showParams, maxSkipped/100, start, end)
		},
	}
	addLogFlags(cmd.Flags(), &lf)
	cmd.Flags().BoolVar(&count, "count", false, "print only the number of events of each kind and the line counts")
	addMaxSkipped(cmd.Flags(), &maxSkipped)
	cmd.Flags().StringVar(&startFlag, "start", "", `print events from this log time on (RFC 3339 or "2006-01-02 15:04:05", local time without a zone)`)
	cmd.Flags().StringVar(&endFlag, "end", "", "print events before this log time; reading stops a little after it")
	cmd.Flags().BoolVar(&showParams, "show-params", false, "include parameter values and the query texts as logged, constants included")
	return cmd
}

func runEvents(ctx context.Context, stdio IO, paths []string, lf logFlags, count, showParams bool, maxSkipped float64, start, end int64) error {
	// Every event the reader finds, pgrehearse's own sessions' too: no
	// selection but the time window, if one is given. Past its end,
	// reading stops once events are later than a replay's look-ahead
	// (events are in completion order): a slice of a large log is read
	// only up to there.
	var sel *source.Selection
	if start != 0 || end != 0 {
		sel = &source.Selection{Start: start, End: end, KeepOwn: true, StopAfter: replayrun.DefaultLookahead.Microseconds()}
	}
	set, err := openLogs(stdio, paths, lf, 1, sel)
	var oe *source.OpenError
	if errors.As(err, &oe) {
		// The reader's own words: events shows what the reader does.
		return oe.Err
	}
	if err != nil {
		return err
	}
	defer set.Close()
	out := bufio.NewWriterSize(stdio.Stdout, 1<<16)
	defer out.Flush()
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	// Indexed by Kind: a counter per event, which bench/parse.sh times
	// as the reader's own speed, must cost next to nothing.
	var kinds [256]int64
	cache := fingerprint.NewCache(0)
	for i, src := range set.Sources() {
		r := set.Readers()[i]
		rc := src.(event.Recycler)
		n := 0
		for {
			if n++; n&1023 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			ev, err := src.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			kinds[ev.Kind]++
			if !count {
				if err := enc.Encode(report.EventJSON(cache, ev, showParams)); err != nil {
					return err
				}
			}
			// Written and counted: nothing keeps it.
			rc.Recycle(ev)
		}
		out.Flush()
		reportLogWarnings(stdio, source.WarningsOf(r))
		if lr, ok := source.LogReader(r); ok && count {
			if err := report.WriteLogCounts(out, lr.Name(), lr.Layout(), lr.Format(), lr.Prefix(), lr.Counters()); err != nil {
				return err
			}
		}
	}
	if count {
		if err := report.WriteEventCounts(out, &kinds); err != nil {
			return err
		}
	}
	if cut := set.Partial(); cut != nil {
		return cutError(cut)
	}
	if n := set.Measured(kinds[event.Statement]+kinds[event.Execute], maxSkipped); n != nil {
		return nothingError(n)
	}
	return nil
}
