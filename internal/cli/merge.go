package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pgrehearse/pgrehearse/internal/report"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

func newMergeCmd(ctx context.Context, stdio IO) *cobra.Command {
	var jsonPath string
	cmd := &cobra.Command{
		Use:   "merge [flags] RESULT.json...",
		Short: "Merge the results of the parts of one workload (analyze or replay JSON)",
		Long: `merge combines results of the same kind (analyses, or replays at the same
speed) into one, exactly: calls, errors and statement accounting add up, latency
histograms and timelines merge bucket for bucket. The parts are meant to be one
workload split by session (a log analyzed in parts, a replay spread over several
machines), whose merge equals the result of the whole.

The merged result is written as JSON (schema: docs/results-json.md) to --json,
standard output by default, with a one-line summary on standard error.
Results of different latency sources, or written by an older pgrehearse without
latency histograms, are refused with the reason.

Shards of one replay or analysis (each read the whole input and kept its share
of the sessions) merge only with shards of the same input, split the same way,
and never twice the same shard; their line accounting is counted once. A merge
that lacks some shards, or holds shards that failed (stopped early, or seen
lost by the others), is written marked incomplete, names them, and exits 5.
Shards of a replay must also be of the same run and start barrier; the merge
lists each shard's statements, time, CPU, memory, lag and clock offset, the
spread of their clocks, and names a shard whose replayer was the bottleneck
(its CPU saturated while it fell behind its schedule).
Two results of the same input that are not shards are refused: every statement
would count twice.
` + exitHelp(exitDocMergeIncomplete),
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutputs("--json", jsonPath); err != nil {
				return err
			}
			parts := make([]*results.Result, len(args))
			for i, p := range args {
				var err error
				if parts[i], err = readResultFile(p); err != nil {
					return err
				}
			}
			m, err := results.MergeAll(parts...)
			if err != nil {
				return err
			}
			// Each shard that is missing or failed, by name.
			var missing error
			var gone, failed, whys []string
			for _, f := range m.ShardFailures() {
				if f.Missing {
					gone = append(gone, report.ShardFailureText(f))
				} else {
					failed = append(failed, report.ShardFailureText(f))
				}
			}
			if len(gone) > 0 {
				why := fmt.Sprintf("shards %v of %d are missing, the merge covers part of the input (%s)", m.MissingShards(), m.Part.Of, strings.Join(gone, "; "))
				m.MarkIncomplete(results.IncompleteMissingParts, why)
				whys = append(whys, why)
			}
			if len(failed) > 0 {
				why := "shards failed: " + strings.Join(failed, "; ")
				m.MarkIncomplete(results.IncompleteFailedParts, why)
				whys = append(whys, why)
			}
			if len(whys) > 0 {
				missing = &exitError{code: ExitIncomplete, err: errors.New("MERGE INCOMPLETE: " + strings.Join(whys, "; ") + "; the result is marked incomplete and report will not judge it")}
			}
			if err := writeJSON(stdio.Stdout, jsonPath, m); err != nil {
				return err
			}
			s := m.Statements
			fmt.Fprintf(stdio.Stderr, "merged %d %s results: %d statements (%d executed, %d failed, %d skipped), %d sessions, %d distinct queries\n",
				len(parts), m.Kind, s.Total, s.Executed, s.Failed, s.SkippedTotal(), m.Sessions.Total, len(m.Queries))
			if err := report.WriteShards(stdio.Stderr, m); err != nil {
				return err
			}
			return missing
		},
	}
	cmd.Flags().StringVar(&jsonPath, "json", "-", "write the merged result to `FILE` (\"-\" for standard output)")
	return cmd
}
