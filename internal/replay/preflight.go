package replay

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/connstr"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
)

// Login is a user and a database the replay connects as, after the user
// and database maps. Empty fields are the target DSN's own (or libpq's
// defaults): the zero Login is the DSN as given.
type Login struct {
	User, Database string
}

// Scan is what a first read of the logs tells before a replay: the
// logins to check and the destructive statements the replay would send.
type Scan struct {
	// Logins of the sessions the replay would run that run statements
	// (filters and maps applied), in order of first appearance. A login
	// whose role or database the log itself creates before the login's
	// first session (CREATE ROLE, CREATE USER, CREATE DATABASE, as a log
	// that sets up its own schema has) is left out: the replay creates
	// it on the target before it is used.
	Logins []Login
	// Destructive counts the statements of those sessions that destroy
	// or reshape (DROP TABLE, TRUNCATE, DELETE without WHERE...), by
	// kind.
	Destructive map[string]int64
	// Complete: the logs were read to their end, not cut by the bound.
	Complete bool
	// Peak is the most sessions of the replay open at once in the log
	// (of the part read), each from its connection or first statement
	// to its disconnection or the log's end, as the replay holds their
	// connections; PeakAt is when it was first reached (log time, µs
	// since the epoch; 0 when unknown). The target needs that many
	// connection slots free, times Options.Multiply.
	Peak   int
	PeakAt int64
}

// Scan reads src, the first events of what the replay will run, already
// selected (package source): the caller gives the replay the same events
// afterwards, so that the logs are read once. It stops at the end of src,
// after maxEvents events (0: no bound) or when ctx ends, so that a caller
// can bound its time on a large log and say that the rest is checked only
// as the replay meets it.
func (r *Replayer) Scan(ctx context.Context, src []event.Source, maxEvents int64) (*Scan, error) {
	sc := &Scan{Destructive: map[string]int64{}}
	seen := map[Login]bool{}
	// included holds, per session open in the log, whether the replay
	// runs it; forgotten at its disconnection, so memory follows the
	// sessions open at once, not the log's length.
	included := map[string]bool{}
	created := map[string]bool{} // "role:x", "db:x"
	// open holds the sessions whose connection the replay holds, for
	// the peak: forgotten at their disconnection too.
	open := map[string]struct{}{}
	var n int64
	for _, s := range src {
		for {
			if maxEvents > 0 && n >= maxEvents || ctx.Err() != nil {
				return sc, nil
			}
			ev, err := s.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return sc, err
			}
			n++
			if ev.Session == "" {
				continue
			}
			if ev.Kind == event.Disconnect {
				delete(included, ev.Session)
				delete(open, ev.Session)
				continue
			}
			if ev.Kind == event.Connect || ev.IsExecution() {
				open[ev.Session] = struct{}{}
				if len(open) > sc.Peak {
					sc.Peak, sc.PeakAt = len(open), ev.Time
				}
			}
			// Decided on the first statement: a session that never ran
			// one (an original connection that failed, as the replay
			// counts apart) needs no check.
			if !ev.IsExecution() {
				continue
			}
			if _, decided := included[ev.Session]; !decided {
				included[ev.Session] = true
				l := Login{User: mapped(r.opts.UserMap, ev.User), Database: mapped(r.opts.DatabaseMap, ev.Database)}
				if !seen[l] && !r.created(created, "role:"+l.User) && !r.created(created, "db:"+l.Database) {
					seen[l] = true
					sc.Logins = append(sc.Logins, l)
				}
			}
			// One Class per statement says both what it destroys and
			// what it creates.
			creates := startsWithCreate(ev.Query)
			for _, it := range r.cache.Get(ev.Query) {
				cl := it.Class(ev.Query)
				if cl.Destructive != "" {
					sc.Destructive[cl.Destructive]++
				}
				if creates && cl.Creates != "" {
					created[cl.Creates] = true
				}
			}
		}
	}
	sc.Complete = true
	return sc, nil
}

// Problem says why a pre-flight check failed, so that a caller can say
// what to do about it.
type Problem int

// Problems of a check.
const (
	ProblemNone Problem = iota
	// ProblemConfig: the target DSN does not parse.
	ProblemConfig
	// ProblemUnreachable: nothing answered at the address (connection
	// refused, no such host, no route, timed out).
	ProblemUnreachable
	// ProblemAuth: the server refused the credentials (a wrong
	// password, no pg_hba.conf entry for the user, database or host).
	ProblemAuth
	// ProblemNoRole: the role does not exist on the target.
	ProblemNoRole
	// ProblemNoDatabase: the database does not exist on the target.
	ProblemNoDatabase
	// ProblemRefused: the server refused for another reason, or the
	// query failed.
	ProblemRefused
	// ProblemTooMany: the server has no connection slot left
	// (SQLSTATE class 53: max_connections, a role's or a database's
	// connection limit, or out of memory for a backend).
	ProblemTooMany
	// ProblemNotReady: the server is starting, shutting down or in
	// crash recovery (57P01, 57P02, 57P03).
	ProblemNotReady
	// ProblemNoPrivilege: the role may not connect to the database
	// (42501: CONNECT not granted, or the role lacks LOGIN).
	ProblemNoPrivilege
)

var problemNames = [...]string{"ok", "bad connection string", "unreachable", "authentication failed",
	"role does not exist", "database does not exist", "refused", "no connection slot", "not accepting connections",
	"not allowed to connect"}

func (p Problem) String() string {
	if int(p) < len(problemNames) {
		return problemNames[p]
	}
	return "problem"
}

// Check is the outcome of connecting as one login.
type Check struct {
	Login
	Problem  Problem
	SQLState string
	// Message is the server's or the network's words, without the
	// connection string (which may hold a password).
	Message string
	Took    time.Duration
}

// Preflight connects to the target as each login, at most a few at a
// time, and sends the empty query, each within timeout. It returns a Check per
// login, in the order given. It uses the replay's own connection settings
// (timeouts, read-only) and sends nothing else.
func (r *Replayer) Preflight(ctx context.Context, logins []Login, timeout time.Duration) []Check {
	out := make([]Check, len(logins))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, l := range logins {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i] = r.check(ctx, l, timeout)
		})
	}
	wg.Wait()
	return out
}

func (r *Replayer) check(ctx context.Context, l Login, timeout time.Duration) Check {
	c := Check{Login: l}
	start := time.Now()
	defer func() { c.Took = time.Since(start) }()
	cfg, err := r.config(l.User, l.Database)
	if err != nil {
		c.Problem, c.Message = ProblemConfig, connstr.SafeError(err).Error()
		return c
	}
	// Named as the tool's own: an analysis of the target's log leaves
	// the check's query out of the workload.
	cfg = cfg.Copy()
	cfg.RuntimeParams["application_name"] = PreflightApplication
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err == nil {
		// The empty query: a round trip that no pg_stat_statements
		// of the target's DBA counts.
		_, err = conn.Exec(ctx, "").ReadAll()
		conn.Close(context.Background())
	}
	if err != nil {
		c.Problem, c.SQLState, c.Message = classifyConnect(err)
	}
	return c
}

// ProblemOf sorts a server's refusal of a connection by its SQLSTATE (and,
// for 28000, which covers both, by whether the message says the role does
// not exist), so that the advice follows the cause.
func ProblemOf(sqlstate, message string) Problem {
	switch {
	case sqlstate == "3D000":
		return ProblemNoDatabase
	case sqlstate == "28000" && strings.HasPrefix(message, "role ") && strings.HasSuffix(message, "does not exist"):
		return ProblemNoRole
	case sqlstate == "28P01", sqlstate == "28000":
		return ProblemAuth
	case sqlstate == "42501":
		return ProblemNoPrivilege
	case strings.HasPrefix(sqlstate, "53"):
		return ProblemTooMany
	case sqlstate == "57P01", sqlstate == "57P02", sqlstate == "57P03":
		return ProblemNotReady
	case strings.HasPrefix(sqlstate, "08"):
		return ProblemUnreachable
	}
	return ProblemRefused
}

// classifyConnect sorts a connection's failure.
func classifyConnect(err error) (Problem, string, string) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return ProblemOf(pgErr.Code, pgErr.Message), pgErr.Code, pgErr.Message
	}
	msg := onceEach(connstr.SafeError(err).Error())
	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH), errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &dnsErr), errors.As(err, &opErr):
		return ProblemUnreachable, "", msg
	case strings.Contains(msg, "password") || strings.Contains(msg, "SASL") || strings.Contains(msg, "authentication"):
		return ProblemAuth, "", msg
	}
	return ProblemRefused, "", msg
}

// onceEach returns pgconn's message of a failed connection with each of
// its attempts said once. pgconn lists every attempt on a line of its own
// ("\n\t"), and with sslmode=prefer (libpq's default) it tries each
// address twice, with TLS and without, which fail alike when nothing
// answers: the same line twice. A single attempt left goes on the first
// line, as pgconn writes one.
func onceEach(msg string) string {
	head, rest, ok := strings.Cut(msg, "\n\t")
	if !ok {
		return msg
	}
	var lines []string
	for _, l := range strings.Split(rest, "\n\t") {
		if !slices.Contains(lines, l) {
			lines = append(lines, l)
		}
	}
	if len(lines) == 1 {
		return head + " " + lines[0]
	}
	return head + "\n\t" + strings.Join(lines, "\n\t")
}

// startsWithCreate reports whether sql's first word is CREATE, in any
// case, after white space: the cheap test before parsing.
// created reports whether the log creates name ("role:x", "db:x") before
// here: in the sessions scanned, or in those the replay does not run
// (Options.CreatedElsewhere).
func (r *Replayer) created(seen map[string]bool, name string) bool {
	return seen[name] || r.opts.CreatedElsewhere != nil && r.opts.CreatedElsewhere(name)
}

// CreatedBy returns the roles ("role:NAME") and databases ("db:NAME")
// that a statement creates, as the pre-flight names them.
func CreatedBy(sql string) []string {
	if !startsWithCreate(sql) {
		return nil
	}
	return createdNames(sql)
}

func startsWithCreate(sql string) bool {
	for {
		sql = strings.TrimLeft(sql, " \t\r\n(")
		switch {
		case strings.HasPrefix(sql, "--"):
			// A migration's comment line before its first CREATE.
			i := strings.IndexByte(sql, '\n')
			if i < 0 {
				return false
			}
			sql = sql[i+1:]
			continue
		case strings.HasPrefix(sql, "/*"):
			i := strings.Index(sql, "*/")
			if i < 0 {
				return false
			}
			sql = sql[i+2:]
			continue
		}
		return len(sql) >= 6 && strings.EqualFold(sql[:6], "create")
	}
}

// createdNames returns the roles ("role:NAME") and databases ("db:NAME")
// that sql creates, as fingerprint's classifier reads them.
func createdNames(sql string) []string {
	cls, err := fingerprint.Statements(sql)
	if err != nil {
		return nil
	}
	var out []string
	for _, c := range cls {
		if c.Creates != "" {
			out = append(out, c.Creates)
		}
	}
	return out
}
