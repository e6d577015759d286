package explain

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/catalog"
	"github.com/pgrehearse/pgrehearse/internal/connstr"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/plan"
	"github.com/pgrehearse/pgrehearse/internal/redact"
)

// ApplicationName is the application_name of explain's connections.
const ApplicationName = event.OwnApplicationPrefix + "explain"

// session is one connection to one database of a server, with that
// database's snapshot.
type session struct {
	side Side
	conn *pgx.Conn
	snap *Snapshot
	opts *Options
}

// connect opens a session on database db of the server at dsn (the
// DSN's own database when db is empty).
func connect(ctx context.Context, side Side, dsn, db string, opts *Options) (*session, error) {
	cfg, err := connstr.ParsePgx(dsn)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", side, err)
	}
	if db != "" {
		cfg.Database = db
	}
	cfg.RuntimeParams["application_name"] = ApplicationName
	// Statements are sent once each: no statement cache to fill.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: connect to database %s: %w", side, cfg.Database, err)
	}
	_ = catalog.Untracked(ctx, conn)
	s := &session{side: side, conn: conn, opts: opts}
	if s.snap, err = LoadSnapshot(ctx, conn, opts.statementTimeout()); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("%s: read the server's settings: %w", side, err)
	}
	return s, nil
}

func (s *session) close(ctx context.Context) { s.conn.Close(context.WithoutCancel(ctx)) }

// request is one EXPLAIN to run.
type request struct {
	query  string
	params []*string
	mode   Mode
	// analyze asks for EXPLAIN (ANALYZE, BUFFERS); the caller checked
	// that the statement may run.
	analyze bool
	// set are settings changed for this EXPLAIN only (SET LOCAL).
	set map[string]string
}

// explain runs one EXPLAIN in a read-only transaction that is rolled
// back, with catalog's Explainer (the one EXPLAIN runner, which the
// findings use too). With analyze, the statement runs twice and the
// second run is kept: the first warms the cache, as production's is warm.
func (s *session) explain(ctx context.Context, r request) (*plan.Plan, error) {
	ex := &catalog.Explainer{Conn: s.conn, Timeout: s.opts.statementTimeout(), LockTimeout: s.opts.lockTimeout(), AllowAnalyze: r.analyze}
	out, err := ex.Explain(ctx, catalog.Request{
		Query: r.query, Params: r.params,
		Generic:       r.mode == ModeGeneric,
		GenericOption: r.mode == ModeGeneric && s.snap.Version >= 160000,
		ForceCustom:   r.mode == ModeCustom,
		Analyze:       r.analyze, Buffers: true, Warm: true,
		Set: r.set,
	})
	if err != nil {
		// The step is the runner's word: problems say what the server
		// said.
		var se *catalog.StepError
		if errors.As(err, &se) && se.Step != "read" {
			err = se.Err
		}
		return nil, err
	}
	return out.Plan, nil
}

// stmtKind is what a statement is, for what explain may do with it.
type stmtKind int

const (
	kindSelect stmtKind = iota + 1 // a plain SELECT (or VALUES): ANALYZE may run it
	kindRead                       // a SELECT that locks rows or writes (FOR UPDATE, INTO, a writing CTE)
	kindWrite                      // INSERT, UPDATE, DELETE, MERGE: explained, never run
)

// classify says whether q can be explained, and how; a Problem when not.
// funcs are the functions it calls, for the volatility check. What q is
// is fingerprint's answer, from one parse of the text.
func classify(q string) (kind stmtKind, funcs []string, problem ProblemKind) {
	c, err := fingerprint.Statement(q)
	switch {
	case errors.Is(err, fingerprint.ErrSeveral):
		return 0, nil, ProblemSeveral
	case err != nil:
		return 0, nil, ProblemUnparsable
	}
	switch c.Kind {
	case fingerprint.KindSelect:
		kind = kindRead
		if c.PlainSelect {
			kind = kindSelect
		}
	case fingerprint.KindInsert, fingerprint.KindUpdate, fingerprint.KindDelete, fingerprint.KindMerge:
		kind = kindWrite
	default:
		return 0, nil, ProblemUtility
	}
	return kind, c.FuncNames(), ""
}

// harmless are volatile functions that change nothing but their result.
var harmless = map[string]bool{
	"random": true, "clock_timestamp": true, "timeofday": true, "gen_random_uuid": true,
	"uuid_generate_v4": true, "uuid_generate_v1": true, "random_normal": true,
}

// volatile returns the first of funcs that is volatile on the server and
// not known to be harmless: running it may change something.
func (s *session) volatile(ctx context.Context, funcs []string) (string, error) {
	var check []string
	for _, f := range funcs {
		if !harmless[f] {
			check = append(check, f)
		}
	}
	if len(check) == 0 {
		return "", nil
	}
	var found []string
	err := readOnly(ctx, s.conn, s.opts.statementTimeout(), s.opts.lockTimeout(), func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, "SELECT DISTINCT proname FROM pg_proc WHERE proname = ANY($1) AND provolatile = 'v' ORDER BY 1", check)
		if err != nil {
			return err
		}
		found, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil || len(found) == 0 {
		return "", err
	}
	return found[0], nil
}

var missingRelation = regexp.MustCompile(`relation "((?:[^"]|"")+)" does not exist`)

// problemOf turns an EXPLAIN's error into a Problem of side.
func problemOf(side Side, mode Mode, err error) Problem {
	p := Problem{Side: side, Kind: ProblemError, Message: redact.Message(err.Error())}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return p
	}
	p.Message = redact.Message(pgErr.Message)
	switch pgErr.Code {
	case "42P01":
		p.Kind = ProblemRelationMissing
		if m := missingRelation.FindStringSubmatch(pgErr.Message); m != nil {
			p.Relation = m[1]
		}
	case "57014", "55P03":
		p.Kind = ProblemTimeout
	case "42P18", "42P08":
		if mode == ModeGeneric {
			p.Kind = ProblemNoParams
		}
	}
	return p
}

func (o *Options) statementTimeout() time.Duration {
	if o.StatementTimeout > 0 {
		return o.StatementTimeout
	}
	return 10 * time.Second
}

func (o *Options) lockTimeout() time.Duration {
	if o.LockTimeout > 0 {
		return o.LockTimeout
	}
	return time.Second
}
