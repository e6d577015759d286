package replay

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// What a replay leaves behind on the target: the transactions it
// prepared (PREPARE TRANSACTION of the workload) and did not commit or
// roll back by its end, which keep their locks until someone does; and
// the advisory locks its sessions held when they disconnected, which
// their end released (a sign that the replay took them in another order
// than the original, or that the original left them too). Both are
// named in the result (Replay.Leftovers); with Options.Cleanup the
// prepared ones are rolled back. The checks run on a connection of the
// replay's own, untracked by pg_stat_statements where it may be, opened
// when first needed: a replay that prepares nothing and takes no
// advisory lock opens none.

// leftoverTimeout bounds each of the checks' and the cleanup's round
// trips.
const leftoverTimeout = 5 * time.Second

// leftovers is what the replay knows of them.
type leftovers struct {
	mu sync.Mutex
	// prepared are the global ids the replay prepared on the target, by
	// who prepared them; a COMMIT or ROLLBACK PREPARED that ran removes
	// one.
	prepared map[string]preparedBy
	advisory []results.LeftoverAdvisory
	// conn is the checks' connection; failed says why it could not be
	// made or used ("" when it was).
	conn   *pgconn.PgConn
	failed string
}

type preparedBy struct{ user, db string }

// noteLeftovers reads, of an execution that ran on the target without
// an error (items, of text), the transactions it prepared or finished
// and whether it took an advisory lock.
func (s *session) noteLeftovers(items []fingerprint.Item, text string) {
	for _, it := range items {
		c := it.Class(text)
		switch c.Tx {
		case fingerprint.TxPrepare, fingerprint.TxCommitPrepared, fingerprint.TxRollbackPrepared:
			s.r.left.transaction(c.Tx, c.Gid, preparedBy{user: s.user, db: s.db})
		}
		for _, a := range c.Advisory {
			if a.Op == fingerprint.AdvisoryLock || a.Op == fingerprint.AdvisoryTry {
				s.advisory = true
			}
		}
	}
}

func (l *leftovers) transaction(tx fingerprint.TxControl, gid string, by preparedBy) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if tx == fingerprint.TxPrepare {
		if l.prepared == nil {
			l.prepared = map[string]preparedBy{}
		}
		l.prepared[gid] = by
		return
	}
	delete(l.prepared, gid)
}

// leftoverConn returns the checks' connection, made at the first call (as
// user, on db); nil when it could not be.
func (r *Replayer) leftoverConn(ctx context.Context, user, db string) *pgconn.PgConn {
	l := &r.left
	if l.conn != nil && !l.conn.IsClosed() {
		return l.conn
	}
	if l.failed != "" {
		return nil
	}
	conn, err := r.quietConn(ctx, user, db)
	if err != nil {
		l.failed = err.Error()
		return nil
	}
	l.conn = conn
	return conn
}

// advisoryHeldSQL lists the advisory locks a backend ($1) holds, with
// their keys as the functions take them: a bigint's halves are classid
// and objid (objsubid 1), two integers are classid and objid (objsubid
// 2).
const advisoryHeldSQL = `SELECT coalesce(d.datname, ''),
	CASE l.objsubid WHEN 1 THEN ((l.classid::int8 << 32) | l.objid::int8)::text
		ELSE l.classid::int4::text || ',' || l.objid::int4::text END,
	l.mode
FROM pg_locks l LEFT JOIN pg_database d ON d.oid = l.database
WHERE l.locktype = 'advisory' AND l.granted AND l.pid = $1
ORDER BY 1, 2, 3`

// heldAdvisory names the advisory locks the session's connection holds
// as it is about to close, when the session took any. Not when the
// replay was told to stop: its sessions close at once then.
func (s *session) heldAdvisory() {
	if !s.advisory || s.conn == nil || s.conn.IsClosed() || s.r.stopped() || s.r.hardDone.Load() {
		return
	}
	pid := s.conn.PID()
	l := &s.r.left
	l.mu.Lock()
	defer l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), leftoverTimeout)
	defer cancel()
	conn := s.r.leftoverConn(ctx, s.user, s.db)
	if conn == nil {
		return
	}
	rr := conn.ExecParams(ctx, advisoryHeldSQL, [][]byte{[]byte(fmt.Sprint(pid))}, nil, nil, nil)
	for rr.NextRow() {
		v := rr.Values()
		l.advisory = append(l.advisory, results.LeftoverAdvisory{Session: s.id, Database: string(v[0]), Key: string(v[1]),
			Mode: string(v[2]), Reason: results.LeftoverHeldAtSessionEnd})
	}
	if _, err := rr.Close(); err != nil {
		l.failed = err.Error()
	}
}

// leftoversResult names what the replay left (see leftovers), and with
// Options.Cleanup rolls back the transactions it left prepared. It runs
// once every session ended.
func (r *Replayer) leftoversResult(res *results.Result) {
	l := &r.left
	l.mu.Lock()
	defer l.mu.Unlock()
	defer func() {
		if l.conn != nil {
			l.conn.Close(context.Background())
			l.conn = nil
		}
	}()
	out := &results.Leftovers{AdvisoryLocks: l.advisory}
	if len(l.prepared) > 0 {
		out.Prepared = r.stillPrepared()
	}
	if l.failed != "" {
		res.Warnings = append(res.Warnings, "what the replay left on the target could not be checked whole: "+l.failed)
	}
	if len(out.Prepared) == 0 && len(out.AdvisoryLocks) == 0 {
		return
	}
	res.Leftovers = out
}

// stillPrepared returns the transactions the replay prepared that the
// target still holds prepared, rolled back with Options.Cleanup.
func (r *Replayer) stillPrepared() []results.LeftoverPrepared {
	l := &r.left
	ctx, cancel := context.WithTimeout(context.Background(), leftoverTimeout)
	defer cancel()
	var any preparedBy
	for _, by := range l.prepared {
		any = by
		break
	}
	conn := r.leftoverConn(ctx, any.user, any.db)
	if conn == nil {
		return nil
	}
	rr := conn.ExecParams(ctx, "SELECT gid, database, owner FROM pg_prepared_xacts ORDER BY prepared, gid", nil, nil, nil, nil)
	var out []results.LeftoverPrepared
	for rr.NextRow() {
		v := rr.Values()
		if _, ok := l.prepared[string(v[0])]; ok {
			out = append(out, results.LeftoverPrepared{Gid: string(v[0]), Database: string(v[1]), Owner: string(v[2]),
				Reason: results.LeftoverStillPrepared})
		}
	}
	if _, err := rr.Close(); err != nil {
		l.failed = err.Error()
		return nil
	}
	if r.opts.Cleanup {
		for i := range out {
			r.rollbackPrepared(&out[i])
		}
	}
	return slices.Clip(out)
}

// rollbackPrepared rolls back a prepared transaction the replay left, on
// its database, as the user that prepared it.
func (r *Replayer) rollbackPrepared(p *results.LeftoverPrepared) {
	ctx, cancel := context.WithTimeout(context.Background(), leftoverTimeout)
	defer cancel()
	by := r.left.prepared[p.Gid]
	conn, err := r.quietConn(ctx, by.user, p.Database)
	if err == nil {
		defer conn.Close(context.Background())
		_, err = conn.Exec(ctx, "ROLLBACK PREPARED '"+strings.ReplaceAll(p.Gid, "'", "''")+"'").ReadAll()
	}
	if err != nil {
		p.Cleanup, p.CleanupError = results.LeftoverCleanupFailed, err.Error()
		return
	}
	p.Cleanup = results.LeftoverRolledBack
}
