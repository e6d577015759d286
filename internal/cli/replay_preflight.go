package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/replay"
	"github.com/pgrehearse/pgrehearse/internal/report"
)

// Pre-flight bounds: the logins are gathered from the logs for at most
// preflightScan (a log larger than that is read in part; later logins are
// checked when their sessions connect), and each check may take
// preflightTimeout.
const (
	preflightScan    = 3 * time.Second
	preflightTimeout = 5 * time.Second
)

// preflight checks, before the schedule starts, that the target takes the
// connections the replay will make: every login of the logs (after the
// maps and filters), and the target DSN's own login when something else
// connects with it (the observer, --target-log's marker). It fails with a
// message per failure that says what to do.
func preflight(ctx context.Context, stdio IO, r *replay.Replayer, f replayFlags, paths []string) error {
	start := time.Now()
	var logins []replay.Login
	complete := true
	if slices.Contains(paths, "-") {
		// Standard input cannot be read twice: only the DSN is checked.
		complete = false
	} else {
		readers, err := openLogs(stdio, paths, f.logFlags, 1)
		if err != nil {
			return err
		}
		src := make([]replay.Source, len(readers))
		for i, rd := range readers {
			src[i] = rd
		}
		scan, cancel := context.WithTimeout(ctx, preflightScan)
		sc, err := r.Scan(scan, src, 0)
		cancel()
		closeLogs(readers)
		if err != nil {
			return err
		}
		logins, complete = sc.Logins, sc.Complete
		writeDestructive(stdio.Stderr, sc.Destructive, complete)
	}
	// The DSN's own login: --target-log's marker needs it (without it the
	// server-side durations are lost after the whole replay ran); the
	// observer's evidence is only lost, which a warning says.
	own := -1
	if (f.observe.enabled || len(f.targetLogs) > 0 || len(logins) == 0) && !slices.Contains(logins, replay.Login{}) {
		own = len(logins)
		logins = append(logins, replay.Login{})
	}
	var problems []string
	for _, p := range f.targetLogs {
		if err := readable(p); err != nil {
			problems = append(problems, fmt.Sprintf("--target-log %s: %v", p, err))
		}
	}
	checks := r.Preflight(ctx, logins, preflightTimeout)
	for i, c := range checks {
		if c.Problem == replay.ProblemNone {
			continue
		}
		if i == own && len(f.targetLogs) == 0 && len(checks) > 1 {
			fmt.Fprintf(stdio.Stderr, "pre-flight: WARNING: %s: the server-side evidence (--observe) will be missing\n", describeCheck(c))
			continue
		}
		problems = append(problems, describeCheck(c))
	}
	if len(problems) > 0 {
		return fmt.Errorf("PRE-FLIGHT FAILED: the target does not take the replay's connections; nothing was replayed:\n  %s\n"+
			"(--skip-preflight replays anyway)", strings.Join(problems, "\n  "))
	}
	accepted := 0
	for _, c := range checks {
		if c.Problem == replay.ProblemNone {
			accepted++
		}
	}
	what := fmt.Sprintf("%d of %d logins", accepted, len(checks))
	if !complete {
		what += " (of the first part of the logs: later ones are checked when their sessions connect)"
	}
	fmt.Fprintf(stdio.Stderr, "pre-flight: the target accepted %s in %.1f s\n", what, time.Since(start).Seconds())
	return nil
}

// readable reports why a --target-log file cannot be read.
func readable(path string) error {
	fh, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return errors.New("does not exist: give the target's current log file (log_directory/log_filename)")
		}
		return err
	}
	return fh.Close()
}

// describeCheck says what failed and what to do about it.
func describeCheck(c replay.Check) string {
	who := "the target DSN's own user and database"
	if c.Login != (replay.Login{}) {
		who = fmt.Sprintf("user %q, database %q", c.User, c.Database)
		if c.User == "" {
			who = fmt.Sprintf("database %q (the DSN's user)", c.Database)
		} else if c.Database == "" {
			who = fmt.Sprintf("user %q (the DSN's database)", c.User)
		}
	}
	msg := c.Message
	if c.SQLState != "" {
		msg += " (SQLSTATE " + c.SQLState + ")"
	}
	var advice string
	switch c.Problem {
	case replay.ProblemConfig:
		advice = "fix --target: it is not a valid connection string or URI"
	case replay.ProblemUnreachable:
		advice = "check --target's host and port, and that the server listens there (listen_addresses, port, a firewall)"
	case replay.ProblemAuth:
		advice = "give the password (PGPASSWORD, ~/.pgpass or --target) or allow the connection in the target's pg_hba.conf"
	case replay.ProblemNoRole:
		advice = fmt.Sprintf("create the role on the target (CREATE ROLE %s LOGIN), or replay as another with --user-map %s=ROLE", quoteIdent(c.User), c.User)
		if c.User == "" {
			advice = "create the role on the target, or set user= in --target"
		}
	case replay.ProblemNoDatabase:
		advice = fmt.Sprintf("create the database on the target, or replay into another with --database-map %s=DB", c.Database)
		if c.Database == "" {
			advice = "create the database on the target, or set dbname= in --target"
		}
	default:
		advice = "the server refused the connection"
	}
	return fmt.Sprintf("%s: %s: %s; %s", who, c.Problem, msg, advice)
}

func quoteIdent(s string) string {
	if s != "" && strings.ToLower(s) == s && !strings.ContainsAny(s, ` "-.`) {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// writeDestructive lists, before a replay, the statements of the log that
// destroy or reshape, so that a replay against the wrong server is caught
// before it runs them.
func writeDestructive(w io.Writer, counts map[string]int64, complete bool) {
	if len(counts) == 0 {
		return
	}
	where := "the log holds"
	if !complete {
		where = "the first part of the log holds"
	}
	fmt.Fprintf(w, "pre-flight: %s destructive statements, which the replay will run on the target: %s\n", where, report.CountList(counts))
}
