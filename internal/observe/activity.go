package observe

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
)

// activityQuery reads every client backend but pgrehearse's own (the
// observer's, the replay's catalog reads and probes). A backend
// of another user shows null details to a role without
// pg_read_all_stats; it still counts as a connection. From PostgreSQL 18
// a connection still logging in shows as a client backend in state
// "starting" with no database yet: its datid reads as 0, the oid of no
// database, and it counts as a connection, not an active one.
const activityQueryPG14 = tag + `SELECT coalesce(datid, 0), coalesce(state, ''), coalesce(wait_event_type, ''), coalesce(wait_event, ''),
	coalesce(query_id, 0), coalesce(query, '')
FROM pg_stat_activity
WHERE pid <> pg_backend_pid() AND backend_type = 'client backend' AND application_name NOT LIKE '` + event.OwnApplicationPrefix + `%'`

// Before PostgreSQL 14 there is no query_id.
const activityQueryOld = tag + `SELECT coalesce(datid, 0), coalesce(state, ''), coalesce(wait_event_type, ''), coalesce(wait_event, ''),
	0::bigint, coalesce(query, '')
FROM pg_stat_activity
WHERE pid <> pg_backend_pid() AND backend_type = 'client backend' AND application_name NOT LIKE '` + event.OwnApplicationPrefix + `%'`

// maxQueryRefs bounds the distinct queries the wait profile keeps; past
// it new ones count as "other".
const maxQueryRefs = 5000

// activity samples pg_stat_activity into the series.
type activity struct {
	query string
	cache *fingerprint.Cache
	// refText keeps, for a query id, a text seen with it, to fingerprint
	// when pg_stat_statements never showed that id.
	refText map[string]string
	// queryWaits counts samples by query ref and wait event, over the
	// whole observation.
	queryWaits map[string]map[waitKey]int64
	rounds     int64
	samples    int64 // active backends seen, summed over rounds
	// waits: the samples make the wait profile (no pg_wait_sampling).
	waits bool
}

// activityQuery returns the query reading pg_stat_activity for a server
// version (server_version_num).
func activityQuery(version int) string {
	if version >= 140000 {
		return activityQueryPG14
	}
	return activityQueryOld
}

// backend is one row of an activity query. State, WaitType and WaitEvent
// are "" when null: a state hidden from this role, or no wait.
type backend struct {
	datid                      uint32
	state, waitType, waitEvent string
	queryID                    int64
	query                      string
}

// readActivity runs an activity query and calls each for every backend.
func readActivity(ctx context.Context, conn *pgx.Conn, query string, each func(*backend)) error {
	rows, err := conn.Query(ctx, query)
	if err != nil {
		return err
	}
	var b backend
	_, err = pgx.ForEachRow(rows, []any{&b.datid, &b.state, &b.waitType, &b.waitEvent, &b.queryID, &b.query}, func() error {
		each(&b)
		return nil
	})
	return err
}

func newActivity(c *Capabilities) *activity {
	return &activity{query: activityQuery(c.ServerVersionNum), cache: fingerprint.NewCache(8 << 20), refText: map[string]string{}, queryWaits: map[string]map[waitKey]int64{}, waits: true}
}

func (a *activity) sample(ctx context.Context, conn *pgx.Conn, s *series, now time.Time) error {
	var conns, active, idleTx int64
	type hit struct {
		w   waitKey
		ref string
	}
	var hits []hit
	err := readActivity(ctx, conn, a.query, func(b *backend) {
		conns++
		switch b.state {
		case "active", "fastpath function call":
		case "idle in transaction", "idle in transaction (aborted)":
			idleTx++
			return
		default:
			return
		}
		active++
		if !a.waits {
			return
		}
		typ, ev := b.waitType, b.waitEvent
		if typ == "" {
			// Running on CPU, or in a wait PostgreSQL does not
			// instrument.
			typ, ev = "CPU", "CPU"
		}
		hits = append(hits, hit{waitKey{typ, ev}, a.ref(b.datid, b.queryID, b.query)})
	})
	if err != nil {
		return err
	}
	b := s.at(now)
	b.rounds++
	b.conns += conns
	b.active += active
	b.idleTx += idleTx
	b.maxConns = max(b.maxConns, conns)
	for _, h := range hits {
		b.waits[h.w]++
		b.queries[h.ref]++
		m := a.queryWaits[h.ref]
		if m == nil {
			m = map[waitKey]int64{}
			a.queryWaits[h.ref] = m
		}
		m[h.w]++
	}
	a.rounds++
	a.samples += active
	return nil
}

// ref names the query a backend runs: "q:dbid:queryid" when the server
// computes query ids (resolved through pg_stat_statements at the end),
// else "f:fingerprint" of its text, "" when there is no text.
func (a *activity) ref(datid uint32, queryID int64, text string) string {
	if queryID != 0 {
		r := "q:" + strconv.FormatUint(uint64(datid), 10) + ":" + strconv.FormatInt(queryID, 10)
		if _, ok := a.refText[r]; !ok && len(a.refText) < maxQueryRefs {
			a.refText[r] = text
		}
		return r
	}
	if text == "" {
		return ""
	}
	items := a.cache.Get(text)
	if len(items) == 0 {
		return ""
	}
	return "f:" + items[0].Fingerprint
}
