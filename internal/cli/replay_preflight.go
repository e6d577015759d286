package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/replay"
	"github.com/pgrehearse/pgrehearse/internal/replayrun"
	"github.com/pgrehearse/pgrehearse/internal/report"
)

// writePreflight says what the pre-flight found (replayrun checks it):
// the destructive statements the log holds, a login of the DSN's own that
// failed where that only loses evidence, and how many logins the target
// accepted.
func writePreflight(w io.Writer, pf *replayrun.Preflight, start time.Time) {
	preflightNotes(w, pf)
	what := fmt.Sprintf("%d of %d logins", pf.Accepted(), len(pf.Checks))
	if !pf.Complete {
		what += " (of the first part of the logs: later ones are checked when their sessions connect)"
	}
	fmt.Fprintf(w, "pre-flight: the target accepted %s in %.1f s\n", what, time.Since(start).Seconds())
}

// preflightNotes writes the destructive statements and the DSN's own
// login failed without failing the pre-flight.
func preflightNotes(w io.Writer, pf *replayrun.Preflight) {
	writeDestructive(w, pf.Destructive, pf.Complete)
	for i, c := range pf.Checks {
		if c.Problem != replay.ProblemNone && i == pf.Own && !pf.OwnNeeded && len(pf.Checks) > 1 {
			fmt.Fprintf(w, "pre-flight: WARNING: %s: the server-side evidence (--observe) will be missing\n", describeCheck(c))
		}
	}
}

// preflightFailed says, per login refused, what to do about it.
func preflightFailed(w io.Writer, pf *replayrun.Preflight) error {
	preflightNotes(w, pf)
	var problems []string
	for _, p := range pf.TargetLogs {
		msg := p.Err.Error()
		if errors.Is(p.Err, fs.ErrNotExist) {
			msg = "does not exist: give the target's current log file (log_directory/log_filename)"
		}
		problems = append(problems, fmt.Sprintf("--target-log %s: %s", p.Path, msg))
	}
	for i, c := range pf.Checks {
		if c.Problem == replay.ProblemNone || i == pf.Own && !pf.OwnNeeded && len(pf.Checks) > 1 {
			continue
		}
		problems = append(problems, describeCheck(c))
	}
	return fmt.Errorf("PRE-FLIGHT FAILED: the target does not take the replay's connections; nothing was replayed:\n  %s\n"+
		"(--skip-preflight replays anyway)", strings.Join(problems, "\n  "))
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
