package sweep

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// sampleEvery is the wait event sampling period.
const sampleEvery = 100 * time.Millisecond

// waitQuery reads the wait state of every other client backend of the
// current database. A backend whose state is null is one whose details
// this role may not see; it is left out rather than counted as running.
const waitQuery = `SELECT coalesce(wait_event_type, 'CPU'), coalesce(wait_event, 'running')
FROM pg_stat_activity
WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'
  AND datname = current_database() AND state IS NOT NULL`

type waitKey struct{ typ, event string }

// waitSampler samples pg_stat_activity on its own connection until
// stopped.
type waitSampler struct {
	conn   *pgx.Conn
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	counts map[waitKey]int
	rounds int
	err    error
}

func startWaitSampler(ctx context.Context, conn *pgx.Conn) *waitSampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &waitSampler{conn: conn, cancel: cancel, done: make(chan struct{}), counts: map[waitKey]int{}}
	go s.loop(ctx)
	return s
}

func (s *waitSampler) loop(ctx context.Context) {
	defer close(s.done)
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		if err := s.sample(ctx); err != nil {
			if ctx.Err() == nil {
				s.mu.Lock()
				s.err = err
				s.mu.Unlock()
			}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *waitSampler) sample(ctx context.Context) error {
	rows, err := s.conn.Query(ctx, waitQuery)
	if err != nil {
		return err
	}
	local := map[waitKey]int{}
	for rows.Next() {
		var k waitKey
		if err := rows.Scan(&k.typ, &k.event); err != nil {
			rows.Close()
			return err
		}
		local[k]++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, n := range local {
		s.counts[k] += n
	}
	s.rounds++
	return nil
}

// stop ends sampling and returns the wait events by samples, most first.
// A sampler that fails keeps what it sampled until then.
func (s *waitSampler) stop() (waits []Wait, rounds int, err error) {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	total := 0
	for _, n := range s.counts {
		total += n
	}
	for k, n := range s.counts {
		waits = append(waits, Wait{Type: k.typ, Event: k.event, Samples: n, Share: float64(n) / float64(total)})
	}
	sort.Slice(waits, func(i, j int) bool {
		if waits[i].Samples != waits[j].Samples {
			return waits[i].Samples > waits[j].Samples
		}
		if waits[i].Type != waits[j].Type {
			return waits[i].Type < waits[j].Type
		}
		return waits[i].Event < waits[j].Event
	})
	return waits, s.rounds, s.err
}

// pgssCounts are pg_stat_statements' counters of one query id, summed
// over users and top-level and nested entries.
type pgssCounts struct{ calls, plans int64 }

// pgssSnapshot reads pg_stat_statements without the query texts, which
// would read the whole text file, for the current database. Servers before
// 13 have no plans column.
func pgssSnapshot(ctx context.Context, conn *pgx.Conn) (map[int64]pgssCounts, error) {
	const withPlans = `SELECT queryid, sum(calls)::bigint, sum(plans)::bigint FROM pg_stat_statements(false)
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND queryid IS NOT NULL
GROUP BY queryid`
	const noPlans = `SELECT queryid, sum(calls)::bigint, 0::bigint FROM pg_stat_statements(false)
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND queryid IS NOT NULL
GROUP BY queryid`
	out := map[int64]pgssCounts{}
	rows, err := conn.Query(ctx, withPlans)
	if err == nil {
		err = scanPgss(rows, out)
	}
	if err != nil && ctx.Err() == nil {
		clear(out)
		rows, err2 := conn.Query(ctx, noPlans)
		if err2 != nil {
			return nil, err
		}
		if err2 = scanPgss(rows, out); err2 != nil {
			return nil, err2
		}
		return out, nil
	}
	return out, err
}

func scanPgss(rows pgx.Rows, out map[int64]pgssCounts) error {
	defer rows.Close()
	for rows.Next() {
		var id int64
		var c pgssCounts
		if err := rows.Scan(&id, &c.calls, &c.plans); err != nil {
			return err
		}
		out[id] = c
	}
	return rows.Err()
}

// hotQueries returns the top query ids by calls per second between two
// snapshots taken seconds apart, with their texts.
func hotQueries(ctx context.Context, conn *pgx.Conn, before, after map[int64]pgssCounts, seconds float64, top int) []Hot {
	var all []Hot
	var total int64
	for id, a := range after {
		b := before[id] // zero when new in the window
		calls := a.calls - b.calls
		if calls <= 0 {
			continue
		}
		total += calls
		all = append(all, Hot{QueryID: id,
			CallsPerS: float64(calls) / seconds,
			PlansPerS: float64(max(a.plans-b.plans, 0)) / seconds})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].CallsPerS != all[j].CallsPerS {
			return all[i].CallsPerS > all[j].CallsPerS
		}
		return all[i].QueryID < all[j].QueryID
	})
	if len(all) > top {
		all = all[:top]
	}
	for i := range all {
		all[i].ShareCalls = all[i].CallsPerS * seconds / float64(total)
		_ = conn.QueryRow(ctx, `SELECT left(query, 300) FROM pg_stat_statements WHERE queryid = $1 LIMIT 1`,
			all[i].QueryID).Scan(&all[i].Query)
	}
	return all
}
