package observe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// StatementsReader reads pg_stat_statements' calls and plans per query
// id of one database, on a connection the caller owns, the way a
// Collector reads the view (any version of the extension, in whatever
// schema it was created), for a caller that compares two moments itself
// (a sweep's step). Unlike a Collector it keeps no deltas: resets and
// evictions between two reads are the caller's to mind.
type StatementsReader struct {
	conn    *pgx.Conn
	t       *pgssTracker
	datid   uint32
	version int // server_version_num
}

// QueryCounts are one query id's calls and plans, summed over users and
// nesting levels.
type QueryCounts struct{ Calls, Plans int64 }

// NewStatementsReader returns a reader of conn's database. It fails when
// pg_stat_statements is not created there or cannot be read (not in
// shared_preload_libraries, or a library of another version).
func NewStatementsReader(ctx context.Context, conn *pgx.Conn) (*StatementsReader, error) {
	var datid uint32
	var version int
	var created bool
	err := conn.QueryRow(ctx, tag+`SELECT oid, current_setting('server_version_num')::int,
		EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements')
		FROM pg_database WHERE datname = current_database()`).Scan(&datid, &version, &created)
	if err != nil {
		return nil, fmt.Errorf("observe: %w", err)
	}
	if !created {
		return nil, errors.New("observe: pg_stat_statements is not created in this database")
	}
	c := &Capabilities{}
	if err := probePGSSView(ctx, conn, c); err != nil {
		return nil, err
	}
	if c.PGSS.Is(ExtUnreadable) {
		return nil, errors.New("observe: pg_stat_statements is " + c.PGSS.String())
	}
	t := newPGSSTracker(c)
	t.infoQuery = "" // counts only: no reset detection
	return &StatementsReader{conn: conn, t: t, datid: datid, version: version}, nil
}

// Counts reads the calls and plans of every query id of the database.
// Query texts are not read (that reads the whole query text file).
func (r *StatementsReader) Counts(ctx context.Context) (map[int64]QueryCounts, error) {
	s, err := r.t.read(ctx, r.conn, time.Now())
	if err != nil {
		return nil, fmt.Errorf("observe: %w", err)
	}
	out := map[int64]QueryCounts{}
	for k, e := range s.entries {
		if k.dbid != r.datid {
			continue
		}
		c := out[k.queryid]
		c.Calls += e.calls
		c.Plans += e.plans
		out[k.queryid] = c
	}
	return out, nil
}

// OwnQueryIDs returns the query ids of the statements sent between two
// Counts when r and a WaitSampler share a connection: the later Counts'
// read and the sampler's. pg_stat_statements counts them as any other
// unless the session set pg_stat_statements.track = none, which only a
// superuser may; a caller comparing two Counts as a workload's leaves
// these ids out. The server computes them (EXPLAIN VERBOSE's Query
// Identifier), exactly, where a match of texts would guess at the text
// pg_stat_statements keeps (constants replaced). Servers before
// PostgreSQL 14, and compute_query_id = regress, do not show them: an
// error says which. With compute_query_id = off pg_stat_statements
// counts no statement (it needs query ids): none to leave out.
func (r *StatementsReader) OwnQueryIDs(ctx context.Context) (map[int64]bool, error) {
	if r.version < 140000 {
		return nil, fmt.Errorf("observe: PostgreSQL %d does not show a statement's query id (14 and later do)", r.version/10000)
	}
	ids := map[int64]bool{}
	for _, q := range []string{r.t.snapQuery, samplerStartQuery, activityQuery(r.version)} {
		var out []byte
		if err := r.conn.QueryRow(ctx, "EXPLAIN (VERBOSE, FORMAT JSON) "+q).Scan(&out); err != nil {
			return nil, fmt.Errorf("observe: the query id of the observer's statements: %w", err)
		}
		var plan []struct {
			QueryID *int64 `json:"Query Identifier"`
		}
		if err := json.Unmarshal(out, &plan); err != nil || len(plan) != 1 {
			return nil, fmt.Errorf("observe: the query id of the observer's statements: EXPLAIN's output %.100q is not one plan", out)
		}
		if plan[0].QueryID == nil {
			var compute string
			if err := r.conn.QueryRow(ctx, tag+"SELECT current_setting('compute_query_id')").Scan(&compute); err != nil {
				return nil, fmt.Errorf("observe: compute_query_id: %w", err)
			}
			if compute == "off" {
				return map[int64]bool{}, nil
			}
			return nil, fmt.Errorf("observe: the server does not show query ids with compute_query_id = %s", compute)
		}
		ids[*plan[0].QueryID] = true
	}
	return ids, nil
}

// Texts returns the normalized texts of query ids of the database, each
// cut to at most maxChars characters; an id without a text (evicted
// since) is absent.
func (r *StatementsReader) Texts(ctx context.Context, ids []int64, maxChars int) (map[int64]string, error) {
	out := map[int64]string{}
	if len(ids) == 0 {
		return out, nil
	}
	err := r.t.readTexts(ctx, r.conn, ids, func(qk queryKey, text string) {
		if _, seen := out[qk.queryid]; qk.dbid == r.datid && !seen {
			out[qk.queryid] = cutChars(text, maxChars)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("observe: %w", err)
	}
	return out, nil
}

// cutChars returns the first n characters (runes) of s, as SQL's left()
// does.
func cutChars(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}
