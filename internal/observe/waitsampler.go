package observe

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// WaitSampler counts the wait states of one database's client backends,
// sampled from pg_stat_activity on a connection the caller owns, for a
// measurement window shorter than a Collector's (a sweep's step). Its
// profile differs from a Collector's on purpose: it counts every backend
// whose state the role may see, idle ones included (waiting for their
// client, as Client/ClientRead), so that a load generator that cannot
// keep up shows; and it names a backend waiting on nothing CPU/running.
// It leaves out its own backend and any Collector's, and the other
// databases.
type WaitSampler struct {
	conn  *pgx.Conn
	query string
	datid uint32
	// stop ends the loop between samples. Stop does not cancel a sample
	// in flight: pgx closes a connection whose query is cancelled, and
	// the caller reads pg_stat_statements on it next.
	stop chan struct{}
	done chan struct{}

	mu     sync.Mutex
	counts map[waitKey]int64
	rounds int64
	err    error
}

// samplerStartQuery is what StartWaitSampler reads first: the server's
// version and the database's oid.
const samplerStartQuery = tag + `SELECT current_setting('server_version_num')::int, oid FROM pg_database
		WHERE datname = current_database()`

// StartWaitSampler samples conn's database every interval on conn, from
// its own goroutine, until Stop or the end of ctx; conn must not be used
// meanwhile. It fails when it cannot read the server's version or its
// database's oid.
func StartWaitSampler(ctx context.Context, conn *pgx.Conn, interval time.Duration) (*WaitSampler, error) {
	var version int
	var datid uint32
	err := conn.QueryRow(ctx, samplerStartQuery).Scan(&version, &datid)
	if err != nil {
		return nil, err
	}
	s := &WaitSampler{conn: conn, query: activityQuery(version), datid: datid,
		stop: make(chan struct{}), done: make(chan struct{}), counts: map[waitKey]int64{}}
	go s.loop(ctx, interval)
	return s, nil
}

func (s *WaitSampler) loop(ctx context.Context, interval time.Duration) {
	defer close(s.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := s.sample(ctx); err != nil {
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-s.stop:
			return
		case <-t.C:
		}
	}
}

func (s *WaitSampler) sample(ctx context.Context) error {
	local := map[waitKey]int64{}
	err := readActivity(ctx, s.conn, s.query, func(b *backend) {
		// A null state is a backend whose details this role may not
		// see: left out rather than counted as running.
		if b.datid != s.datid || b.state == "" {
			return
		}
		k := waitKey{b.waitType, b.waitEvent}
		if k.typ == "" {
			k = waitKey{"CPU", "running"}
		}
		local[k]++
	})
	if err != nil {
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

// Stop ends sampling, after the sample in flight if there is one, and
// returns the wait states by samples, most first (Share over all of
// them), and the sampling rounds. The connection is the caller's again,
// usable. A sampler whose query failed (or whose context ended) returns
// what it counted until then, with the error. A sample that has not
// ended stopWait after the stop (a frozen server, a lock) has its
// connection cut, and Stop says so.
func (s *WaitSampler) Stop() (waits []WaitCount, rounds int64, err error) {
	close(s.stop)
	select {
	case <-s.done:
	case <-time.After(stopWait):
		s.conn.PgConn().Conn().SetDeadline(time.Unix(1, 0))
		<-s.done
		s.mu.Lock()
		s.err = fmt.Errorf("the server did not answer the wait sampler within %v of the stop: its connection was cut", stopWait)
		s.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	waits, _ = waitCounts(s.counts)
	return waits, s.rounds, s.err
}
