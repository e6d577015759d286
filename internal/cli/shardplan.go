package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/outfile"
	"github.com/pgrehearse/pgrehearse/internal/report"
	"github.com/pgrehearse/pgrehearse/internal/shard"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

type shardPlanFlags struct {
	logs   logFlags
	shards int
	out    string
	force  []string
	slack  float64
}

func newShardPlanCmd(ctx context.Context, stdio IO) *cobra.Command {
	var f shardPlanFlags
	cmd := &cobra.Command{
		Use:   "plan --shards N --out PLAN.json [flags] LOG|CAPTURE...",
		Short: "Split a log's sessions into N shards for a replay spread over N processes",
		Long: `plan reads the logs once and writes a shard plan: which of N shards replays
each session (replay --shard K/N --plan PLAN.json, or the pods of a Kubernetes
Indexed Job). Shards get even shares of the statements and of the server time
of the log; sessions that write and read the same tables stay in one shard where
the balance allows (--slack), so that most waits of a synchronized replay stay
inside one process. The summary says what share of those dependencies still
crosses shards, next to what a split by hash (no plan) would leave.

The plan is JSON (docs/shard-plan-json.md), written atomically to --out.
` + captureHelp + exitHelp(exitDocNoInput),
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runShardPlan(ctx, stdio, f, args)
		},
	}
	fl := cmd.Flags()
	addLogFlags(fl, &f.logs)
	fl.IntVar(&f.shards, "shards", 0, "number of shards `N` (required)")
	fl.StringVar(&f.out, "out", "", "write the plan to `FILE` (required)")
	fl.StringArrayVar(&f.force, "force", nil, "put a session in a shard whatever the balance: `SESSION=K` (repeatable; for tests)")
	fl.Float64Var(&f.slack, "slack", shard.DefaultSlack, "how much more than an even share a shard may take to keep dependent sessions together (0.05: 5%)")
	return cmd
}

func runShardPlan(ctx context.Context, stdio IO, f shardPlanFlags, paths []string) error {
	if f.shards < 1 {
		return usageError("--shards N is required, N at least 1")
	}
	if f.out == "" || f.out == "-" {
		return usageError("--out FILE is required")
	}
	if f.slack < 0 || f.slack > 1 {
		return usageError("--slack %g: give a fraction between 0 and 1", f.slack)
	}
	force := map[string]int{}
	for _, s := range f.force {
		id, k, ok := strings.Cut(s, "=")
		n, err := strconv.Atoi(k)
		if !ok || id == "" || err != nil {
			return usageError("--force %q: write SESSION=K", s)
		}
		force[id] = n
	}
	b, err := shard.NewBuilder(shard.Options{Shards: f.shards, Force: force, Slack: f.slack})
	if err != nil {
		return usageError("%v", err)
	}
	// The output's directory must take the file before the log is read.
	if err := checkOutputs("--out", f.out); err != nil {
		return err
	}
	var input shard.Input
	for _, p := range paths {
		if p == "-" {
			return usageError("a plan reads files, not standard input: every shard must read the same log")
		}
		// A capture directory is named by its segments, as the
		// shards' replays name it (source.Describe).
		fi, err := source.Describe(p)
		if err != nil {
			return fmt.Errorf("input %s: %w", p, err)
		}
		input.Files = append(input.Files, fi)
	}
	// Every event the reader finds: the shards select their own.
	set, err := openLogs(stdio, paths, f.logs, 1, nil)
	if err != nil {
		return err
	}
	defer set.Close()
	reportLogWarnings(stdio, set.Warnings())
	for i, r := range set.Sources() {
		rc := r.(event.Recycler)
		for {
			if ctx.Err() != nil {
				return &exitError{code: ExitFailure, err: errors.New("interrupted: no plan written")}
			}
			ev, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return fmt.Errorf("%s: %w", set.Readers()[i].Name(), err)
			}
			b.Add(ev)
			rc.Recycle(ev)
		}
	}
	p, err := b.Plan(input)
	if errors.Is(err, shard.ErrNoSessions) {
		return &exitError{code: ExitNoInput, err: fmt.Errorf("NOTHING MEASURED: %w", err)}
	}
	if err != nil {
		return err
	}
	for id, k := range force {
		if _, ok := p.Sessions[id]; !ok {
			fmt.Fprintf(stdio.Stderr, "warning: --force %s=%d: the logs hold no session %q\n", id, k, id)
		}
	}
	if err := outfile.Write(f.out, p.Encode); err != nil {
		return err
	}
	report.WriteShardPlan(stdio.Stderr, p, f.out)
	return nil
}
