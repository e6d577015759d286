package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

func init() { commands = append(commands, newDemoCmd) }

// demoPrefix is the log_line_prefix of the demo's server, passed to analyze
// so that the demo does not depend on prefix detection.
const demoPrefix = workload.LogLinePrefix

func newDemoCmd(ctx context.Context, stdio IO) *cobra.Command {
	var keep bool
	var duration time.Duration
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Capture a workload's log on a throwaway server and analyze it",
		Long: `demo shows pgrehearse end to end without a server of your own. It starts a
throwaway PostgreSQL cluster that logs every statement (in stderr, csvlog and
jsonlog formats at once), runs a mixed workload on it (pgbench in the simple,
extended and prepared protocols, and an application sending odd parameters,
transactions and failing statements), stops the server so the logs are
complete, and runs "pgrehearse analyze" on the stderr log.

It needs the PostgreSQL server binaries (initdb, pg_ctl, postgres, pgbench):
set PG_BIN to their directory, or install them with
  ` + pgcluster.InstallHint + `
When run as root, the server runs as the "postgres" user.
` + exitCodeHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if duration <= 0 {
				return usageError("--duration must be positive, got %v", duration)
			}
			return runDemo(cmd.Context(), stdio, keep, duration)
		},
	}
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the cluster directory and its logs after the demo")
	cmd.Flags().DurationVar(&duration, "duration", 12*time.Second, "pgbench time, shared by its three query protocols")
	return cmd
}

func runDemo(ctx context.Context, stdio IO, keep bool, duration time.Duration) (err error) {
	say := func(format string, args ...any) { fmt.Fprintf(stdio.Stderr, "demo: "+format+"\n", args...) }

	settings := workload.LogSettings()
	say("starting a throwaway PostgreSQL cluster")
	c, err := pgcluster.Start(ctx, pgcluster.Options{Settings: settings, Keep: keep})
	if err != nil {
		return err
	}
	// Runs on every path, Ctrl-C included: a leaked server is a bug.
	defer func() {
		if stopErr := c.Stop(); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("stop the cluster: %w", stopErr))
		}
	}()
	say("cluster in %s (PostgreSQL from %s, port %d)", c.Dir(), c.BinDir(), c.Port())

	sum, err := workload.Run(ctx, c, workload.Options{Duration: duration, Progress: stdio.Stderr})
	if err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	for _, run := range sum.Pgbench {
		say("pgbench -M %-8s %d clients, %v: %d transactions", run.Mode, run.Clients, run.Duration, run.Transactions)
	}
	a := sum.App
	say("application: %d sessions, %d simple queries, %d extended executions, %d failed on purpose",
		a.Sessions, a.Queries, a.Executions, a.Failed)

	say("stopping the server so that the logs are complete")
	if err := c.StopServer(); err != nil {
		return err
	}
	var stderrLogs []string
	for _, pattern := range []string{"*.log", "*.csv", "*.json"} {
		files, err := c.LogFiles(pattern)
		if err != nil {
			return err
		}
		for _, f := range files {
			say("log: %s", f)
		}
		if pattern == "*.log" {
			stderrLogs = files
		}
	}
	if len(stderrLogs) == 0 {
		return fmt.Errorf("the server wrote no stderr log in %s", c.LogDir())
	}
	if keep {
		say("kept %s; remove it with: rm -rf %s", c.Dir(), c.Dir())
	} else {
		say("the logs are removed when the demo ends; pass --keep to keep them")
	}

	say("pgrehearse analyze --format stderr --prefix '%s' %s", demoPrefix, strings.Join(stderrLogs, " "))
	return runAnalyze(ctx, stdio, stderrLogs)
}

// runAnalyze is the demo's single call of the analysis: the analyze
// subcommand, run in this process through the same command tree, so the
// demo shows exactly what a user typing "pgrehearse analyze" gets. It is a
// variable so that the demo's test can check what it is handed without
// depending on the analysis.
var runAnalyze = func(ctx context.Context, stdio IO, paths []string) error {
	args := append([]string{"analyze", "--format", "stderr", "--prefix", demoPrefix}, paths...)
	if code := Run(ctx, stdio, args); code != ExitOK {
		return &exitError{code: code, err: fmt.Errorf("demo: analyze failed (exit code %d)", code)}
	}
	return nil
}
