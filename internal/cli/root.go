package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/pgrehearse/pgrehearse/internal/outfile"
)

// Exit codes, shared by every command and documented in --help.
const (
	ExitOK         = 0
	ExitFailure    = 1 // the work failed: unreadable input, unreachable server
	ExitUsage      = 2 // bad flags or arguments
	ExitRegression = 3 // the run worked but broke a threshold
	ExitNoInput    = 4 // the input held nothing to measure, or mostly lines that could not be read
	ExitIncomplete = 5 // the run lost part of the workload, or a result cannot be judged for that
	ExitDiverged   = 6 // the replay did different work than the original: its timings are not a verdict
	ExitUndecided  = 7 // rehearse: no rule broken, but a query may break one and the rounds' budget ended before they could tell
)

// IO is what a command may touch of the process: its standard streams.
type IO struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// exitError carries an exit code with an error.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageError(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// exitDoc is one exit code as a command's help explains it: each command
// lists only the codes it can return, in its own words.
type exitDoc struct {
	code int
	text string
}

// The exit codes as the commands explain them. Codes 0, 1 and 2 are every
// command's; the others belong to the commands that name them.
var (
	exitDocNoInput = exitDoc{ExitNoInput, "nothing to measure: the input yielded no statement, only statements " +
		"that failed (a server that logs only its errors), or more than --max-skipped of its lines could not be read"}
	exitDocInputCut = exitDoc{ExitIncomplete, "incomplete input: a log broke off (a truncated compressed file); " +
		"the figures cover what was read before"}
	exitDocReplayIncomplete = exitDoc{ExitIncomplete, "incomplete: the replay lost more than --max-lost of its " +
		"statements (connections refused or lost, the target gone or frozen), was interrupted (Ctrl-C, SIGTERM), " +
		"was degraded by recovering from a fault, or its log broke off; the result is written and marked, and " +
		"report will not judge it"}
	exitDocErrorRate = exitDoc{ExitRegression, "the replay worked, but the target's error rate exceeded the " +
		"original's by more than --max-error-rate, or its first --error-window statements all failed on the target " +
		"(none in the original) and it stopped early"}
	exitDocMergeIncomplete = exitDoc{ExitIncomplete, "incomplete: the merge lacks some shards of its input; " +
		"the merged result is written, marked incomplete"}
	exitDocFailOn = exitDoc{ExitRegression, "the comparison worked, and a --fail-on rule is broken"}
	// exitDocUndecided: rehearse's rounds until decided.
	exitDocUndecided = exitDoc{ExitUndecided, "undecided: no --fail-on rule is broken, but a query's interval holds a ratio that breaks one, " +
		"and --max-rounds or --max-time ended the rounds added before they could tell"}
	exitDocRefused = exitDoc{ExitIncomplete, "not judged: a result is incomplete, interrupted, degraded, " +
		"much smaller than the other side, or inconsistent (the field is named); or, with one run a side, a " +
		"replay fell behind its schedule (lag p99 above its --max-lag): the latency is not judged, errors and " +
		"divergence are"}
	exitDocTargetData = exitDoc{ExitDiverged, "the target's data differs from the start: answers of statements " +
		"that read rows no concurrent transaction of the original touched differ from the capture's, with nothing " +
		"else to explain them, the same rows more than once (named by table; docs/sync.md)"}
	exitDocDiverged = exitDoc{ExitDiverged, "diverged: the candidate replay did different work than the " +
		"baseline (rows per call, errors of ordering such as foreign keys): sessions that depended on each " +
		"other ran out of order, and the candidate is not judged (see docs/sync.md)"}
)

// exitHelp is the "Exit codes:" section of a command's help: 0, 1 and 2,
// then docs in order of their codes (two docs of one code are joined).
func exitHelp(docs ...exitDoc) string {
	all := append([]exitDoc{
		{ExitOK, "success"},
		{ExitFailure, "failure: unreadable input, unreachable server, an error during the run"},
		{ExitUsage, "usage error: bad flags or arguments"},
	}, docs...)
	slices.SortStableFunc(all, func(a, b exitDoc) int { return a.code - b.code })
	var b strings.Builder
	b.WriteString("\nExit codes:\n")
	for i := 0; i < len(all); i++ {
		text := all[i].text
		for i+1 < len(all) && all[i+1].code == all[i].code {
			i++
			text += "; or " + all[i].text
		}
		b.WriteString(wrapExit(all[i].code, text))
	}
	return b.String()
}

// wrapExit writes one code's line, wrapped at 76 columns under its text.
func wrapExit(code int, text string) string {
	var b strings.Builder
	line := fmt.Sprintf("  %d  ", code)
	indent := strings.Repeat(" ", len(line))
	n := len(line)
	for i, w := range strings.Fields(text) {
		if i > 0 && n+1+len(w) > 76 {
			b.WriteString(line + "\n")
			line, n = indent+w, len(indent)+len(w)
			continue
		}
		if i > 0 {
			line += " "
			n++
		}
		line += w
		n += len(w)
	}
	b.WriteString(line + "\n")
	return b.String()
}

// exitCodeHelp is the overview of every code, in the root command's help.
var exitCodeHelp = exitHelp(exitDocFailOn, exitDocErrorRate, exitDocNoInput,
	exitDoc{ExitIncomplete, "incomplete: a replay lost more than --max-lost of its statements, was " +
		"interrupted or degraded; a log broke off; a merge lacks shards; or report was asked to judge such a result, " +
		"or one run a side whose replay fell behind its schedule (latency not judged)"},
	exitDocDiverged, exitDocUndecided)

// commands are the constructors of the subcommands, all in this one
// list: a new command is added here.
func commands() []func(ctx context.Context, stdio IO) *cobra.Command {
	return []func(ctx context.Context, stdio IO) *cobra.Command{
		newAnalyzeCmd, newCaptureCmd, newDemoCmd, newEventsCmd, newFindingsCmd, newHeadroomCmd, newMergeCmd,
		newObserveCmd, newRehearseCmd, newReplayCmd, newReportCmd, newShardPlanCmd, newSweepCmd,
	}
}

// Run runs pgrehearse with args and returns the process exit code.
func Run(ctx context.Context, stdio IO, args []string) int {
	stdio.Stdout = &pipeWriter{w: stdio.Stdout}
	if _, ok := stdio.Stderr.(*os.File); !ok {
		// A file's writes are each whole already, and the progress
		// bars look for a terminal behind it. Another writer a caller of
		// Run gave (a buffer, in tests and in programs that embed the
		// CLI) has its writes serialized: a command's goroutines write
		// their lines at once (a fold's or a step's shards, each
		// reporting its process), and each line must arrive whole.
		stdio.Stderr = outfile.Lock(stdio.Stderr)
	}
	root := &cobra.Command{
		Use:           "pgrehearse",
		Version:       Version(),
		Short:         "Rehearse a PostgreSQL workload from its server logs",
		Long:          "pgrehearse reads production traffic from PostgreSQL server logs, replays it against a\ntarget server and reports what got slower.\n" + exitCodeHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
		// Connection strings are checked before any work (dsnVar).
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return checkDSNFlags(cmd) },
	}
	root.SetIn(stdio.Stdin)
	root.SetOut(stdio.Stdout)
	root.SetErr(stdio.Stderr)
	root.SetArgs(args)
	root.SetFlagErrorFunc(flagError)
	for _, newCmd := range commands() {
		root.AddCommand(newCmd(ctx, stdio))
	}
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(stdio.Stderr, "pgrehearse:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if isUsage(err) {
		return ExitUsage
	}
	return ExitFailure
}

// isUsage recognizes cobra's own argument errors, which are plain errors.
func isUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "invalid argument"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// pipeWriter is standard output that a reader may close early (| head):
// once a write fails with EPIPE, the rest is dropped without an error, so
// that the command goes on to write its files and exits with its own code.
// Its writes are serialized, as outfile.Locked's.
type pipeWriter struct {
	mu     sync.Mutex
	w      io.Writer
	broken bool
}

func (p *pipeWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.broken {
		return len(b), nil
	}
	n, err := p.w.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		p.broken = true
		return len(b), nil
	}
	return n, err
}

// version is set at link time by make build (git describe); without it,
// Version falls back to what the Go toolchain recorded.
var version string

// Version is the version and the commit pgrehearse was built from.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	if version != "" {
		v = version
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+modified"
			}
		}
	}
	if rev != "" {
		v += " (commit " + rev[:min(12, len(rev))] + dirty + ")"
	}
	return v + ", " + bi.GoVersion
}
