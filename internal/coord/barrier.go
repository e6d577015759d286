package coord

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Barrier waits until every shard of the run has joined, then returns
// the start: a time of this machine's clock, the same instant for every
// shard (to within half the round trip of its clock measurement). The
// first shard to see all N fixes it Lead ahead on the coordination
// server's clock. It fails after timeout, naming the shards that did
// not come, or at once when one of them left.
//
// After it, the Member publishes its commits and follows the others'
// until Finish.
func (m *Member) Barrier(ctx context.Context, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	c := m.cfg
	for {
		// Alive while it waits: a shard that passed the barrier first
		// must not take this one for lost before its worker beats.
		if _, err := m.work.Exec(ctx, "UPDATE pgrehearse_coord.members SET heartbeat = clock_timestamp() WHERE run = $1 AND shard = $2", c.Run, c.Shard); err != nil {
			return time.Time{}, fmt.Errorf("coordination database: %w", err)
		}
		var startAt *time.Time
		if err := m.work.QueryRow(ctx, "SELECT start_at FROM pgrehearse_coord.runs WHERE run = $1", c.Run).Scan(&startAt); err != nil {
			return time.Time{}, fmt.Errorf("coordination database: %w", err)
		}
		if startAt != nil {
			// Measured again now, nearer the start.
			if clk, err := measureClock(ctx, m.work, 8); err == nil && clk.RTT <= m.clock.RTT*2 {
				m.clock = clk
			}
			m.start, m.startServer = m.clock.Local(*startAt), *startAt
			m.begin()
			return m.start, nil
		}
		present, gone, err := m.members(ctx)
		if err != nil {
			return time.Time{}, err
		}
		if len(gone) > 0 {
			// A shard that passed the barrier may have finished
			// since the start was read: look again.
			var again *time.Time
			if err := m.work.QueryRow(ctx, "SELECT start_at FROM pgrehearse_coord.runs WHERE run = $1", c.Run).Scan(&again); err != nil {
				return time.Time{}, fmt.Errorf("coordination database: %w", err)
			}
			if again != nil {
				continue
			}
			return time.Time{}, fmt.Errorf("run %q: shard %s left before the start", c.Run, list(gone))
		}
		if len(present) == c.Shards {
			if _, err := m.work.Exec(ctx, `WITH s AS (UPDATE pgrehearse_coord.runs SET start_at = clock_timestamp() + $2::interval
				WHERE run = $1 AND start_at IS NULL RETURNING 1) SELECT pg_notify($3, 'start') FROM s`,
				c.Run, c.Lead.String(), m.channel); err != nil {
				return time.Time{}, fmt.Errorf("coordination database: %w", err)
			}
			continue
		}
		left := time.Until(deadline)
		if left <= 0 {
			var missing []int
			for k := range c.Shards {
				if !slices.Contains(present, k) {
					missing = append(missing, k)
				}
			}
			return time.Time{}, fmt.Errorf("run %q: shard %s did not join within %s (%d of %d there)", c.Run, list(missing), timeout, len(present), c.Shards)
		}
		if err := m.waitNotice(ctx, min(left, c.Poll)); err != nil {
			return time.Time{}, err
		}
	}
}

// members returns the shards registered and running, and those that
// registered but are gone (failed, or their session ended).
func (m *Member) members(ctx context.Context) (present, gone []int, err error) {
	rows, err := m.work.Query(ctx, `SELECT shard, status, EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = m.pid)
		FROM pgrehearse_coord.members m WHERE run = $1 ORDER BY shard`, m.cfg.Run)
	if err != nil {
		return nil, nil, fmt.Errorf("coordination database: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k int
		var status string
		var alive bool
		if err := rows.Scan(&k, &status, &alive); err != nil {
			return nil, nil, fmt.Errorf("coordination database: %w", err)
		}
		if status == statusRunning && alive {
			present = append(present, k)
		} else {
			gone = append(gone, k)
		}
	}
	return present, gone, rows.Err()
}

// waitNotice waits for a notification on the run's channel, or d.
func (m *Member) waitNotice(ctx context.Context, d time.Duration) error {
	if m.listen == nil {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	n, err := m.listen.WaitForNotification(wctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, context.DeadlineExceeded) || wctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("coordination database: %w", err)
	}
	m.notice(n.Payload)
	return nil
}

func list(ks []int) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = fmt.Sprint(k)
	}
	return strings.Join(s, ", ")
}
