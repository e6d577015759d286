package coord

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// tick is how often the worker looks whether the low watermark moved
// without a commit having run (the reader read on).
const tick = 5 * time.Millisecond

// begin starts the worker (publication, heartbeat, polling: it owns the
// work connection) and the listener.
func (m *Member) begin() {
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.wg.Add(1)
	go m.worker()
	if m.listen != nil {
		m.wg.Add(1)
		go m.listener()
	}
}

func (m *Member) setErr(err error) {
	m.errMu.Lock()
	m.err = err
	m.errMu.Unlock()
}

func (m *Member) worker() {
	defer m.wg.Done()
	t := time.NewTicker(tick)
	defer t.Stop()
	var lastBeat, lastPoll time.Time
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-m.dirty:
		case <-t.C:
		}
		now := time.Now()
		low, done, changed := m.progress()
		if changed || now.Sub(lastBeat) >= m.cfg.Heartbeat {
			if err := m.publish(low, done); err != nil {
				m.setErr(err)
				m.reconnectWork()
			} else {
				lastBeat = now
			}
		}
		if now.Sub(lastPoll) >= m.cfg.Poll {
			lastPoll = now
			if err := m.poll(); err != nil {
				m.setErr(err)
				m.reconnectWork()
			}
		}
	}
}

// publish writes the shard's low watermark and heartbeat to its row and
// notifies the others of it and of the commits that ran after it.
func (m *Member) publish(low int64, done []int64) error {
	// Notified even without done positions: the low watermark alone
	// releases what the others hold.
	payloads := progressPayloads(m.cfg.Shard, low, done)
	ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
	defer cancel()
	_, err := m.work.Exec(ctx, `WITH u AS (UPDATE pgrehearse_coord.members SET low = $3, heartbeat = clock_timestamp()
		WHERE run = $1 AND shard = $2) SELECT count(pg_notify($4, p)) FROM unnest($5::text[]) AS p`,
		m.cfg.Run, m.cfg.Shard, low, m.channel, payloads)
	if err != nil {
		return fmt.Errorf("coordination database: publish: %w", err)
	}
	m.stats.published.Add(int64(len(payloads)))
	for _, p := range payloads {
		m.stats.publishedBytes.Add(int64(len(p)))
	}
	return nil
}

// poll reads every shard's row: its low watermark (the fallback for lost
// notifications) and whether it is alive.
func (m *Member) poll() error {
	m.stats.polls.Add(1)
	ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
	defer cancel()
	rows, err := m.work.Query(ctx, `SELECT shard, low, status, EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = m.pid),
		extract(epoch FROM clock_timestamp() - heartbeat)::float8 FROM pgrehearse_coord.members m WHERE run = $1`, m.cfg.Run)
	if err != nil {
		return fmt.Errorf("coordination database: poll: %w", err)
	}
	type row struct {
		k      int
		low    int64
		status string
		alive  bool
		silent float64
	}
	var rs []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.k, &r.low, &r.status, &r.alive, &r.silent); err != nil {
			rows.Close()
			return fmt.Errorf("coordination database: poll: %w", err)
		}
		rs = append(rs, r)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("coordination database: poll: %w", err)
	}
	for _, r := range rs {
		if r.k == m.cfg.Shard {
			continue
		}
		silent := time.Duration(r.silent * float64(time.Second))
		switch {
		case r.status == statusFailed:
			m.lose(r.k)
		case r.status == statusFinished:
			m.apply(r.k, r.low, nil)
		case !r.alive && silent > 2*m.cfg.Heartbeat, silent > m.cfg.LostAfter:
			// Its session ended (killed, or its machine gone) and it
			// has not come back: it is lost.
			m.lose(r.k)
		default:
			m.apply(r.k, r.low, nil)
		}
	}
	return nil
}

// reconnectWork opens the work connection again after an error, and
// points the shard's row at its new session.
func (m *Member) reconnectWork() {
	if m.ctx.Err() != nil {
		return
	}
	if m.work != nil && !m.work.IsClosed() {
		return
	}
	ctx, cancel := context.WithTimeout(m.ctx, 5*time.Second)
	defer cancel()
	conn, err := connect(ctx, m.cfg.DSN)
	if err != nil {
		m.setErr(err)
		return
	}
	if _, err := conn.Exec(ctx, "UPDATE pgrehearse_coord.members SET pid = pg_backend_pid(), heartbeat = clock_timestamp() WHERE run = $1 AND shard = $2",
		m.cfg.Run, m.cfg.Shard); err != nil {
		m.setErr(err)
		conn.Close(ctx)
		return
	}
	m.work = conn
}

// listener applies the other shards' notifications as they come.
func (m *Member) listener() {
	defer m.wg.Done()
	for {
		n, err := m.listen.WaitForNotification(m.ctx)
		if err != nil {
			if m.ctx.Err() != nil {
				return
			}
			m.setErr(fmt.Errorf("coordination database: listen: %w", err))
			// Polling carries on meanwhile; listen again.
			if !m.relisten() {
				return
			}
			continue
		}
		m.stats.received.Add(1)
		m.notice(n.Payload)
	}
}

// notice applies one notification of the run's channel.
func (m *Member) notice(payload string) {
	if k, low, done, ok := parseProgress(payload); ok && k != m.cfg.Shard {
		m.apply(k, low, done)
	} else if k, ok := parseFailed(payload); ok && k != m.cfg.Shard && k < m.cfg.Shards {
		m.lose(k)
	}
}

func (m *Member) relisten() bool {
	for {
		t := time.NewTimer(time.Second)
		select {
		case <-m.ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(m.ctx, 5*time.Second)
		conn, err := connect(ctx, m.cfg.DSN)
		if err == nil {
			if _, err = conn.Exec(ctx, "LISTEN "+pgx.Identifier{m.channel}.Sanitize()); err == nil {
				old := m.listen
				m.listen = conn
				old.Close(ctx)
				cancel()
				return true
			}
			conn.Close(ctx)
		}
		cancel()
		m.setErr(err)
	}
}

// Finish ends the shard's part: every commit of it is published as done
// (those that did not run never will: nothing must wait for them), its
// status is set (failed when ok is false: the others count its commits
// as lost), and the connections are closed. It may be called once; the
// Member is not used after.
func (m *Member) Finish(ctx context.Context, ok bool) error {
	if m.finished.Swap(true) {
		return errors.New("coordination: finished twice")
	}
	m.mu.Lock()
	m.room.Broadcast()
	m.mu.Unlock()
	if m.cancel != nil {
		m.cancel()
		m.wg.Wait()
	}
	status := statusFinished
	if !ok {
		status = statusFailed
	}
	notice := progressPayloads(m.cfg.Shard, noLow, nil)[0]
	if !ok {
		notice = failedPayload(m.cfg.Shard)
	}
	var err error
	if m.work == nil || m.work.IsClosed() {
		// Stopping the worker may have cancelled a query in flight,
		// which closes the connection: the others must still learn
		// that this shard finished, or they take it for lost.
		m.work, err = connect(ctx, m.cfg.DSN)
	}
	if err == nil {
		_, err = m.work.Exec(ctx, `WITH u AS (UPDATE pgrehearse_coord.members SET status = $3, low = $4, heartbeat = clock_timestamp()
			WHERE run = $1 AND shard = $2) SELECT pg_notify($5, $6)`,
			m.cfg.Run, m.cfg.Shard, status, int64(noLow), m.channel, notice)
		if err != nil {
			err = fmt.Errorf("coordination database: finish: %w", err)
		}
	}
	m.closeConns()
	return err
}
