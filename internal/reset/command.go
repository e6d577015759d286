package reset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/connstr"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/outfile"
	"github.com/pgrehearse/pgrehearse/internal/tailbuf"
)

// Environment variables a reset command gets, besides libpq's PGHOST,
// PGPORT, PGUSER and PGDATABASE, which name the target.
const (
	// EnvDSN is a connection string of the target without its password.
	EnvDSN = "PGREHEARSE_DSN"
	// EnvTarget is the target's name in the rehearsal (Command.Name).
	EnvTarget = "PGREHEARSE_TARGET"
	// EnvRound is the target's round about to start, from 1.
	EnvRound = "PGREHEARSE_ROUND"
)

// DefaultReadyTimeout is how long a target may take to accept
// connections after its reset command: a snapshot rolled back under a
// running server means a restart and crash recovery.
const DefaultReadyTimeout = 5 * time.Minute

// tailBytes is how much of the command's standard error an error quotes.
const tailBytes = 2 << 10

// Command resets a target with the user's own command, run by /bin/sh -c
// before each round: a ZFS or LVM snapshot rolled back, an EBS volume
// restored, a Database Lab clone reset. The command gets the target in
// libpq's variables (PGHOST, PGPORT, PGUSER, PGDATABASE of DSN) and in
// EnvDSN, its name in EnvTarget and the round in EnvRound, with the rest
// of pgrehearse's environment. The DSN's password is not passed (a
// command that needs one finds it where libpq does: PGPASSWORD or
// PGPASSFILE in the environment, ~/.pgpass). After the command the reset
// waits until the target accepts connections.
type Command struct {
	// Command is the shell command.
	Command string
	// DSN is the target's connection string.
	DSN string
	// Name is the target's name in the rehearsal, such as "control".
	Name string
	// Timeout bounds one run of the command; zero means no bound.
	Timeout time.Duration
	// ReadyTimeout bounds the wait for the target afterwards; zero
	// means DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// Output, if not nil, receives the command's standard output and
	// standard error as it runs.
	Output io.Writer
}

// CommandError is a reset command that failed.
type CommandError struct {
	Name  string // the target's name
	Round int
	// Status is the exit status, or -1 when the command was killed by a
	// signal or could not start.
	Status int
	// Stderr is the end of what the command wrote to its standard
	// error, with the target's password (if it was there) hidden.
	Stderr string
	Err    error
}

func (e *CommandError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the reset command of the %s target failed before its round %d", e.Name, e.Round)
	if e.Status >= 0 {
		fmt.Fprintf(&b, " (exit status %d)", e.Status)
	} else {
		fmt.Fprintf(&b, " (%v)", e.Err)
	}
	if s := strings.TrimSpace(e.Stderr); s != "" {
		b.WriteString("; its standard error ended with:\n" + s)
	}
	return b.String()
}

func (e *CommandError) Unwrap() error { return e.Err }

// Mode is ModeCommand.
func (c *Command) Mode() Mode { return ModeCommand }

// Prepare checks that the DSN parses; the target as it is now is what the
// user's command returns it to.
func (c *Command) Prepare(context.Context) error {
	if strings.TrimSpace(c.Command) == "" {
		return errors.New("reset: the reset command is empty")
	}
	_, err := connstr.Parse(c.DSN)
	return err
}

// Release does nothing: the next run of the command resets.
func (c *Command) Release(context.Context, State) error { return nil }

// Close does nothing.
func (c *Command) Close(context.Context) error { return nil }

// Reset runs the command and waits for the target.
func (c *Command) Reset(ctx context.Context, round int) (State, error) {
	t := time.Now()
	cfg, err := connstr.Parse(c.DSN)
	if err != nil {
		return State{}, err
	}
	if err := c.run(ctx, cfg, round); err != nil {
		return State{}, err
	}
	if err := waitReady(ctx, cfg, orDefault(c.ReadyTimeout, DefaultReadyTimeout)); err != nil {
		return State{}, fmt.Errorf("after the reset command of the %s target: %w", c.Name, err)
	}
	return State{Mode: ModeCommand, Round: round, Seconds: since(t)}, nil
}

func (c *Command) run(ctx context.Context, cfg *pgconn.Config, round int) error {
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", c.Command)
	cmd.Env = commandEnv(os.Environ(), cfg, c.Name, round)
	// Its own process group, so that a cancellation kills what the
	// shell started too (zfs, aws), not only the shell.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	tail := tailbuf.New(tailBytes)
	var stdout, stderr io.Writer = io.Discard, tail
	if c.Output != nil {
		out := outfile.Lock(c.Output) // the command's two streams into one writer
		stdout, stderr = out, io.MultiWriter(tail, out)
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	if err == nil {
		return nil
	}
	ce := &CommandError{Name: c.Name, Round: round, Status: -1, Err: err, Stderr: hide(tail.String(), cfg.Password)}
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() >= 0 {
		ce.Status = exit.ExitCode()
	}
	if ctx.Err() != nil {
		ce.Err = fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	return ce
}

// commandEnv is the command's environment: env with libpq's variables
// naming the target set from cfg, and the rehearsal's own.
func commandEnv(env []string, cfg *pgconn.Config, name string, round int) []string {
	set := map[string]string{
		"PGHOST":     cfg.Host,
		"PGPORT":     strconv.Itoa(int(cfg.Port)),
		"PGUSER":     cfg.User,
		"PGDATABASE": cfg.Database,
		EnvDSN:       dsnWithoutPassword(cfg),
		EnvTarget:    name,
		EnvRound:     strconv.Itoa(round),
	}
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			out = append(out, kv)
		}
	}
	for _, k := range []string{"PGHOST", "PGPORT", "PGUSER", "PGDATABASE", EnvDSN, EnvTarget, EnvRound} {
		out = append(out, k+"="+set[k])
	}
	return out
}

// dsnWithoutPassword is a keyword/value connection string of cfg's first
// host, without the password.
func dsnWithoutPassword(cfg *pgconn.Config) string {
	return "host=" + quoteConninfo(cfg.Host) + " port=" + strconv.Itoa(int(cfg.Port)) +
		" user=" + quoteConninfo(cfg.User) + " dbname=" + quoteConninfo(cfg.Database)
}

// quoteConninfo quotes a keyword/value connection string value.
func quoteConninfo(s string) string {
	if s != "" && !strings.ContainsAny(s, " '\\\t\n") {
		return s
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// hide replaces every occurrence of secret in s.
func hide(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "********")
}

// waitReady polls until the target accepts a connection (and answers a
// query), for at most timeout.
func waitReady(ctx context.Context, cfg *pgconn.Config, timeout time.Duration) error {
	cfg = cfg.Copy()
	cfg.RuntimeParams["application_name"] = event.OwnApplicationPrefix + "reset"
	if cfg.ConnectTimeout == 0 || cfg.ConnectTimeout > 10*time.Second {
		cfg.ConnectTimeout = 10 * time.Second
	}
	deadline := time.Now().Add(timeout)
	wait := 100 * time.Millisecond
	for {
		conn, err := pgconn.ConnectConfig(ctx, cfg)
		if err == nil {
			// The empty query: a round trip that pg_stat_statements
			// does not count.
			_, err = conn.Exec(ctx, "").ReadAll()
			conn.Close(context.Background())
			if err == nil {
				return nil
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the target did not accept connections within %v: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
