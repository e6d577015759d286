package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"strings"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/numfmt"
	"github.com/pgrehearse/pgrehearse/internal/replayrun"
)

// WritePreflight says what the pre-flight found (replayrun checks it):
// the destructive statements the log holds, a login of the DSN's own that
// failed where that only loses evidence, and how many logins the target
// accepted.
func WritePreflight(w io.Writer, pf *replayrun.Preflight, start time.Time, h LoginHints) {
	preflightNotes(w, pf, h)
	what := fmt.Sprintf("%d of %d logins", pf.Accepted(), len(pf.Checks))
	if !pf.Complete {
		what += " (of the first part of the logs: later ones are checked when their sessions connect)"
	}
	fmt.Fprintf(w, "pre-flight: the target accepted %s in %.1f s\n", what, time.Since(start).Seconds())
	writeSlots(w, pf)
	WriteStartCheck(w, pf)
}

// WriteTargetPreflight is WritePreflight for one of several targets, a
// rehearsal's control or candidate: each line names it ("pre-flight
// (control): ..."), as the targets' checks follow each other with the
// rounds' progress between them.
func WriteTargetPreflight(w io.Writer, name string, pf *replayrun.Preflight, start time.Time, h LoginHints) {
	var b bytes.Buffer
	WritePreflight(&b, pf, start, h)
	io.WriteString(w, preflightLine.ReplaceAllLiteralString(b.String(), "pre-flight ("+name+"):"))
}

// preflightLine finds the pre-flight's lines.
var preflightLine = regexp.MustCompile(`(?m)^pre-flight:`)

// writeSlots says how the input's peak of sessions open at once compares
// with the target's free connection slots, when the pre-flight passed: a
// warning when the slots are too few (--ignore-connection-limit) or
// could not be read.
func writeSlots(w io.Writer, pf *replayrun.Preflight) {
	switch {
	case pf.Peak == 0:
	case pf.ServerErr != nil:
		fmt.Fprintf(w, "pre-flight: WARNING: %s; the target's free connection slots could not be read: %v\n", peakText(pf), pf.ServerErr)
	case pf.TooFewSlots():
		fmt.Fprintf(w, "pre-flight: WARNING: %s, more than the target's %s (--ignore-connection-limit): sessions beyond them will not connect\n",
			peakText(pf), slotsText(pf.Server))
	default:
		fmt.Fprintf(w, "pre-flight: %s; the target has %s\n", peakText(pf), slotsText(pf.Server))
	}
}

// peakText says how many sessions the replay holds open at once at most.
func peakText(pf *replayrun.Preflight) string {
	what := "the log"
	if !pf.Complete {
		what = "the first part of the log"
	}
	at := ""
	if pf.PeakAt > 0 {
		at = " (at " + time.UnixMicro(pf.PeakAt).UTC().Format("2006-01-02 15:04:05 UTC") + ")"
	}
	n := numfmt.Thousands(fmt.Sprint(pf.Peak)) + " sessions"
	if pf.Peak == 1 {
		n = "1 session"
	}
	return fmt.Sprintf("%s holds up to %s open at once%s", what, n, at)
}

// slotsText says how many connection slots a server has free, and why
// so many.
func slotsText(s *replayrun.Server) string {
	reserved := fmt.Sprintf("%d superuser_reserved_connections", s.SuperuserReserved)
	if s.Reserved > 0 {
		reserved += fmt.Sprintf(", %d reserved_connections", s.Reserved)
	}
	return fmt.Sprintf("%s free connection slots (max_connections %d less %s and %s in use)",
		numfmt.Thousands(fmt.Sprint(s.FreeSlots())), s.MaxConnections, reserved, numfmt.Thousands(fmt.Sprint(s.InUse)))
}

// SlotsProblem is the pre-flight's failure for too few connection
// slots, with what to do.
func SlotsProblem(pf *replayrun.Preflight) string {
	return fmt.Sprintf("%s, more than the target's %s: raise its max_connections to at least %s (the peak and the reserved slots) plus its other clients "+
		"(or --ignore-connection-limit replays anyway, and sessions beyond the slots fail to connect)",
		peakText(pf), slotsText(pf.Server), numfmt.Thousands(fmt.Sprint(pf.Peak+pf.Server.SuperuserReserved+pf.Server.Reserved)))
}

// preflightNotes writes the destructive statements and the DSN's own
// login failed without failing the pre-flight.
func preflightNotes(w io.Writer, pf *replayrun.Preflight, h LoginHints) {
	writeDestructive(w, pf.Destructive, pf.Complete)
	for i, c := range pf.Checks {
		if c.Problem != replayrun.ProblemNone && i == pf.Own && !pf.OwnNeeded && len(pf.Checks) > 1 && !saidForAll(pf, c) {
			fmt.Fprintf(w, "pre-flight: WARNING: %s: the server-side evidence (--observe) will be missing\n", DescribeCheck(c, h))
		}
	}
}

// saidForAll reports whether own, the DSN's own login that failed, failed
// as a login of the replay's did, for a reason of the server, not of the
// login (nothing answers, it is not ready): the pre-flight's failure says
// it then, and a warning would say it again.
func saidForAll(pf *replayrun.Preflight, own replayrun.Check) bool {
	if !replayrun.ServerProblem(own.Problem) && own.Problem != replayrun.ProblemConfig {
		return false
	}
	for i, c := range pf.Checks {
		if i != pf.Own && c.Problem == own.Problem {
			return true
		}
	}
	return false
}

// PreflightFailed says, per login refused, what to do about it.
func PreflightFailed(w io.Writer, pf *replayrun.Preflight, h LoginHints) error {
	preflightNotes(w, pf, h)
	var problems []string
	for _, p := range pf.TargetLogs {
		msg := p.Err.Error()
		if errors.Is(p.Err, fs.ErrNotExist) {
			msg = "does not exist: give the target's current log file (log_directory/log_filename)"
		}
		problems = append(problems, fmt.Sprintf("%s %s: %s", h.LogFlag(), p.Path, msg))
	}
	for _, m := range pf.LogSettings {
		problems = append(problems, fmt.Sprintf("%s: the target's log cannot give server-side durations: %s", h.LogFlag(), m))
	}
	if pf.TooFewSlots() && !pf.SlotsIgnored {
		problems = append(problems, SlotsProblem(pf))
	}
	// A server that does not answer, or is not ready, refuses every
	// login alike: said once, with how many more it refused.
	alike := map[replayrun.Problem]int{}
	for i, c := range pf.Checks {
		if c.Problem == replayrun.ProblemNone || i == pf.Own && !pf.OwnNeeded && len(pf.Checks) > 1 {
			continue
		}
		if replayrun.ServerProblem(c.Problem) {
			if alike[c.Problem]++; alike[c.Problem] > 1 {
				continue
			}
		}
		problems = append(problems, DescribeCheck(c, h))
	}
	for _, p := range []replayrun.Problem{replayrun.ProblemUnreachable, replayrun.ProblemNotReady} {
		if n := alike[p] - 1; n > 0 {
			problems = append(problems, LoginsAlike(n))
		}
	}
	return fmt.Errorf("PRE-FLIGHT FAILED: the target does not take the replay's connections; nothing was replayed:\n  %s\n"+
		"(--skip-preflight replays anyway)", strings.Join(problems, "\n  "))
}

// LoginsAlike counts the logins refused as the one said before them.
func LoginsAlike(n int) string {
	if n == 1 {
		return "and 1 more login alike"
	}
	return fmt.Sprintf("and %d more logins alike", n)
}

// DescribeCheck says what failed and what to do about it.
func DescribeCheck(c replayrun.Check, h LoginHints) string {
	who := "the target DSN's own user and database"
	if c.Login != (replayrun.Login{}) {
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
	return fmt.Sprintf("%s: %s: %s; %s", who, c.Problem, msg, h.Advice(c.Problem, c.User, c.Database))
}

// LoginHints are the run's options that the Advice on a refused login
// must agree with: a role or database already renamed by a map is to be
// created, not renamed again; a server not ready was already retried for
// connectTimeout.
type LoginHints struct {
	MappedUsers, MappedDBs map[string]bool // the maps' target names
	ConnectTimeout         time.Duration
	// TargetLog is the option that names the target's log: --target-log,
	// or a rehearsal's side's (--control-log); "" is --target-log.
	TargetLog string
}

// LogFlag is the option that names the target's log.
func (h LoginHints) LogFlag() string {
	if h.TargetLog == "" {
		return "--target-log"
	}
	return h.TargetLog
}

// Advice says what to do about a login the target refused, by the cause
// (the SQLSTATE class, through replayrun.ProblemOf), in terms of the options
// the run already has. user and db are the names the target was asked
// for, after the maps.
func (h LoginHints) Advice(p replayrun.Problem, user, db string) string {
	switch p {
	case replayrun.ProblemConfig:
		return "fix --target: it is not a valid connection string or URI"
	case replayrun.ProblemUnreachable:
		return "check --target's host and port, and that the server listens there (listen_addresses, port, a firewall)"
	case replayrun.ProblemAuth:
		return "give the password (PGPASSWORD, ~/.pgpass or --target) or allow the connection in the target's pg_hba.conf"
	case replayrun.ProblemNoRole:
		switch {
		case user == "":
			return "create the role on the target, or set user= in --target"
		case h.MappedUsers[user]:
			return fmt.Sprintf("create the role on the target (CREATE ROLE %s LOGIN): --user-map already replays as it", quoteIdent(user))
		}
		return fmt.Sprintf("create the role on the target (CREATE ROLE %s LOGIN), or replay as another with --user-map %s=ROLE", quoteIdent(user), user)
	case replayrun.ProblemNoDatabase:
		switch {
		case db == "":
			return "create the database on the target, or set dbname= in --target"
		case h.MappedDBs[db]:
			return fmt.Sprintf("create the database %s on the target: --database-map already replays into it", quoteIdent(db))
		}
		return fmt.Sprintf("create the database on the target, or replay into another with --database-map %s=DB", db)
	case replayrun.ProblemNoPrivilege:
		return fmt.Sprintf("allow the role to connect on the target (GRANT CONNECT ON DATABASE %s TO %s; ALTER ROLE %s LOGIN)",
			quoteIdent(orDefault(db, "DB")), quoteIdent(orDefault(user, "ROLE")), quoteIdent(orDefault(user, "ROLE")))
	case replayrun.ProblemTooMany:
		return "the target had no connection slot left: raise its max_connections (or the role's or database's CONNECTION LIMIT) " +
			"above the log's concurrent sessions plus the server's other clients"
	case replayrun.ProblemNotReady:
		return fmt.Sprintf("the target was starting, shutting down or recovering, and did not accept connections within --connect-timeout (%s): "+
			"wait until it accepts them, or raise --connect-timeout", h.ConnectTimeout)
	}
	return "the server refused the connection"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
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
	fmt.Fprintf(w, "pre-flight: %s destructive statements, which the replay will run on the target: %s\n", where, CountList(counts))
}
