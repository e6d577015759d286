package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes, shared by every command and documented in --help.
const (
	ExitOK         = 0
	ExitFailure    = 1 // the work failed: unreadable input, unreachable server
	ExitUsage      = 2 // bad flags or arguments
	ExitRegression = 3 // the run worked but broke a threshold
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

const exitCodeHelp = `
Exit codes:
  0  success
  1  failure: unreadable input, unreachable server, an error during the run
  2  usage error: bad flags or arguments
  3  the run worked but broke a --fail-on threshold
`

// commands lists the constructors of the subcommands. Each command file
// registers itself in an init function so that adding one touches no
// other file.
var commands []func(ctx context.Context, stdio IO) *cobra.Command

// Run runs pgrehearse with args and returns the process exit code.
func Run(ctx context.Context, stdio IO, args []string) int {
	root := &cobra.Command{
		Use:           "pgrehearse",
		Short:         "Rehearse a PostgreSQL workload from its server logs",
		Long:          "pgrehearse reads production traffic from PostgreSQL server logs, replays it against a\ntarget server and reports what got slower.\n" + exitCodeHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdio.Stdin)
	root.SetOut(stdio.Stdout)
	root.SetErr(stdio.Stderr)
	root.SetArgs(args)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &exitError{code: ExitUsage, err: err}
	})
	for _, newCmd := range commands {
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
