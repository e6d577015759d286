package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pgrehearse/pgrehearse/internal/capturerun"
	"github.com/pgrehearse/pgrehearse/internal/report"
)

// adminFlags are the flags that reach a capture proxy's admin interface.
type adminFlags struct {
	addr, tokenFile string
}

func (a *adminFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&a.addr, "admin", "127.0.0.1:6433", "the capture proxy's admin interface (host:port, or an http:// URL)")
	fl.StringVar(&a.tokenFile, "admin-token-file", "", "file holding the admin interface's bearer token")
}

func (a *adminFlags) client() (*capturerun.Client, error) {
	token, err := readAdminToken(a.tokenFile)
	if err != nil {
		return nil, err
	}
	return &capturerun.Client{Addr: a.addr, Token: token}, nil
}

// readAdminToken reads a bearer token from path ("" is none): the file's
// content without surrounding white space, which must not be empty.
func readAdminToken(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--admin-token-file: %w", err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", fmt.Errorf("--admin-token-file: %s is empty", path)
	}
	return token, nil
}

// drainInterrupt returns a channel closed by a Ctrl-C or SIGTERM that
// comes after ctx is done: the first stops the capture and starts its
// drain, a second ends the drain. release stops the watch.
func drainInterrupt(ctx context.Context) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(sig)
		select {
		case <-sig:
			close(ch)
		case <-done:
		}
	}()
	return ch, func() { close(done) }
}

func newCaptureStartCmd(ctx context.Context, stdio IO) *cobra.Command {
	var (
		af           adminFlags
		out, maxSize string
		duration     time.Duration
	)
	cmd := &cobra.Command{
		Use:   "start --admin ADDR --out DIR",
		Short: "Start a recording in a running capture proxy",
		Long: `start asks a capture proxy started with --admin to record into --out, a directory
on the proxy's machine, from now on: every session that connects from now on is
recorded, and so are the sessions open already, from the middle with their
settings and prepared statements: everything an idle one sends once the start
has answered is recorded, and one inside a transaction or with a request in
flight is from its next idle point (docs/capture-midsession.md). One the proxy
cannot take up is relayed, not
recorded, and counted with why in the recording's status. One recording at a
time: a second start is refused with the running one's id. No connection is
dropped, delayed or changed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usageError("capture start needs --out")
			}
			c, err := af.client()
			if err != nil {
				return err
			}
			req := capturerun.StartRequest{Out: out, MaxSize: maxSize}
			if duration != 0 {
				req.Duration = duration.String()
			}
			st, err := c.Start(ctx, req)
			var ae *capturerun.AdminError
			if errors.As(err, &ae) && ae.ID != "" {
				return fmt.Errorf("recording %s is under way: stop it first (pgrehearse capture stop --admin %s %s): %w", ae.ID, af.addr, ae.ID, err)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(stdio.Stdout, "recording %s started into %s", st.ID, st.Out)
			if st.Resumed > 0 {
				fmt.Fprintf(stdio.Stdout, "; %d sessions open already are recorded from the middle, with their state", st.Resumed)
			}
			if st.Waiting > 0 {
				fmt.Fprintf(stdio.Stdout, "; %d busy (in a transaction or a request) will be from their next idle point", st.Waiting)
			}
			if st.NotRecorded > 0 {
				fmt.Fprintf(stdio.Stdout, "; %d sessions open already are not recorded", st.NotRecorded)
			}
			fmt.Fprintln(stdio.Stdout)
			return nil
		},
	}
	fl := cmd.Flags()
	af.register(fl)
	fl.StringVar(&out, "out", "", "capture directory to create on the proxy's machine (it must not hold a capture already); {start} in it is replaced by the UTC start time")
	fl.DurationVar(&duration, "duration", 0, "finalize the recording after this long (0: when stopped)")
	fl.StringVar(&maxSize, "max-size", "", "finalize the recording when its files reach this size (e.g. 10GB; empty: unbounded)")
	return cmd
}

func newCaptureStopCmd(ctx context.Context, stdio IO) *cobra.Command {
	var af adminFlags
	cmd := &cobra.Command{
		Use:   "stop --admin ADDR [ID]",
		Short: "Finalize a recording of a running capture proxy (the one under way without ID)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := af.client()
			if err != nil {
				return err
			}
			var id string
			if len(args) == 1 {
				id = args[0]
			} else {
				l, err := c.List(ctx)
				if err != nil {
					return err
				}
				if l.Current == "" {
					return fmt.Errorf("no recording is under way")
				}
				id = l.Current
			}
			st, err := c.Stop(ctx, id)
			if err != nil {
				return err
			}
			report.WriteRecording(stdio.Stdout, st)
			if !st.Complete {
				return &exitError{code: ExitIncomplete, err: fmt.Errorf("the capture %s is incomplete: %s", st.Out, st.Reason)}
			}
			return nil
		},
	}
	af.register(cmd.Flags())
	return cmd
}

func newCaptureStatusCmd(ctx context.Context, stdio IO) *cobra.Command {
	var (
		af       adminFlags
		jsonPath string
	)
	cmd := &cobra.Command{
		Use:   "status --admin ADDR",
		Short: "List the recordings of a running capture proxy, with their state and counters",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := af.client()
			if err != nil {
				return err
			}
			l, err := c.List(ctx)
			if err != nil {
				return err
			}
			if jsonPath != "" {
				return writeJSON(stdio.Stdout, jsonPath, l)
			}
			if len(l.Recordings) == 0 {
				fmt.Fprintln(stdio.Stdout, "no recording yet")
			}
			for _, st := range l.Recordings {
				report.WriteRecording(stdio.Stdout, st)
			}
			return nil
		},
	}
	af.register(cmd.Flags())
	cmd.Flags().StringVar(&jsonPath, "json", "", "write the recordings as JSON to this file (- for standard output)")
	return cmd
}
