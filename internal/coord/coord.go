package coord

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/connstr"
	"github.com/pgrehearse/pgrehearse/internal/event"
)

// Application is the application_name of the coordination connections.
const Application = event.OwnApplicationPrefix + "coord"

// Defaults of Config.
const (
	DefaultLead       = 5 * time.Second
	DefaultPoll       = 200 * time.Millisecond
	DefaultHeartbeat  = time.Second
	DefaultLostAfter  = 5 * time.Second
	DefaultMaxPending = 1 << 20
)

// Config says which run a shard joins and how.
type Config struct {
	// DSN of the coordination database.
	DSN string
	// Run names the replay; every shard of it gives the same.
	Run string
	// Shard is this shard's number, from 0, of Shards.
	Shard, Shards int
	// Agree is what every shard of the run must have in common (plan
	// id, logs, speed, synchronization...): a shard with another is
	// refused at Join.
	Agree string
	// Lead is how far ahead of the moment all shards are there the start
	// is fixed. Default DefaultLead.
	Lead time.Duration
	// Poll is how often the shards' rows are read (watermarks, liveness):
	// the fallback when notifications are lost. Default DefaultPoll.
	Poll time.Duration
	// Heartbeat is how often the shard says it is alive; LostAfter how
	// long another's silence makes it lost. Defaults DefaultHeartbeat and
	// DefaultLostAfter.
	Heartbeat, LostAfter time.Duration
	// MaxPending bounds the commits of other shards held, waiting to be
	// released; Foreign blocks past it. Default DefaultMaxPending.
	MaxPending int
	// NoListen: no LISTEN, polling only (to test the fallback).
	NoListen bool
}

func (c *Config) defaults() error {
	if c.Shards < 1 || c.Shard < 0 || c.Shard >= c.Shards {
		return fmt.Errorf("shard %d of %d: shards are numbered from 0 to %d", c.Shard, c.Shards, c.Shards-1)
	}
	if c.Run == "" {
		return errors.New("a coordinated run needs a name, shared by every shard")
	}
	if c.Lead <= 0 {
		c.Lead = DefaultLead
	}
	if c.Poll <= 0 {
		c.Poll = DefaultPoll
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	if c.LostAfter <= 0 {
		c.LostAfter = DefaultLostAfter
	}
	if c.MaxPending <= 0 {
		c.MaxPending = DefaultMaxPending
	}
	return nil
}

// Member is one shard's membership of a run. Its methods are safe for
// concurrent use unless they say otherwise.
type Member struct {
	cfg     Config
	channel string
	work    *pgx.Conn // the worker goroutine's after Barrier
	listen  *pgx.Conn
	clock   Clock
	start   time.Time
	// startServer is the start on the coordination server's clock.
	startServer time.Time

	ctx    context.Context // ends the goroutines
	cancel context.CancelFunc
	wg     sync.WaitGroup
	dirty  chan struct{}

	mu      sync.Mutex
	own     ownState
	remotes []*remote // by shard; nil for this one
	pending int       // foreign commits held, every shard together
	room    *sync.Cond

	stats statCounters
	errMu sync.Mutex
	err   error // the worker's last error, for Stats

	finished atomic.Bool
}

// Clock is a shard's clock against the coordination server's.
type Clock struct {
	// Offset is the server's clock minus this machine's; RTT the round
	// trip of the sample it was read from (the offset is known to within
	// half of it).
	Offset, RTT time.Duration
}

// Local turns a time of the server's clock into this machine's.
func (c Clock) Local(server time.Time) time.Time { return server.Add(-c.Offset) }

const schema = `
CREATE SCHEMA IF NOT EXISTS pgrehearse_coord;
CREATE TABLE IF NOT EXISTS pgrehearse_coord.runs (
	run      text PRIMARY KEY,
	shards   int NOT NULL,
	agree    text NOT NULL,
	created  timestamptz NOT NULL DEFAULT clock_timestamp(),
	start_at timestamptz
);
CREATE TABLE IF NOT EXISTS pgrehearse_coord.members (
	run       text NOT NULL REFERENCES pgrehearse_coord.runs ON DELETE CASCADE,
	shard     int NOT NULL,
	pid       int NOT NULL,
	host      text NOT NULL,
	joined    timestamptz NOT NULL DEFAULT clock_timestamp(),
	heartbeat timestamptz NOT NULL DEFAULT clock_timestamp(),
	status    text NOT NULL DEFAULT 'running',
	low       bigint NOT NULL DEFAULT 0,
	PRIMARY KEY (run, shard)
);`

// Member statuses in the coordination database.
const (
	statusRunning  = "running"
	statusFinished = "finished"
	statusFailed   = "failed"
)

// Join connects to the coordination database, creates its tables if they
// are not there, registers the shard in the run and measures the clock
// offset. It fails when the run exists with another shard count or Agree
// string, has started already, or has this shard registered by a process
// that is still connected.
func Join(ctx context.Context, cfg Config) (*Member, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	work, err := connect(ctx, cfg.DSN)
	if err != nil {
		return nil, err
	}
	m := &Member{cfg: cfg, work: work, channel: channelOf(cfg.Run), dirty: make(chan struct{}, 1),
		remotes: make([]*remote, cfg.Shards)}
	m.room = sync.NewCond(&m.mu)
	for k := range m.remotes {
		if k != cfg.Shard {
			m.remotes[k] = &remote{}
		}
	}
	fail := func(err error) (*Member, error) {
		m.closeConns()
		return nil, err
	}
	if err := m.register(ctx); err != nil {
		return fail(err)
	}
	if m.clock, err = measureClock(ctx, work, 8); err != nil {
		return fail(fmt.Errorf("coordination database: clock: %w", err))
	}
	if !cfg.NoListen {
		if m.listen, err = connect(ctx, cfg.DSN); err != nil {
			return fail(err)
		}
		if _, err := m.listen.Exec(ctx, "LISTEN "+pgx.Identifier{m.channel}.Sanitize()); err != nil {
			return fail(fmt.Errorf("coordination database: listen: %w", err))
		}
	}
	return m, nil
}

func connect(ctx context.Context, dsn string) (*pgx.Conn, error) {
	cfg, err := connstr.ParsePgx(dsn)
	if err != nil {
		return nil, fmt.Errorf("coordination database: %w", err)
	}
	cfg.RuntimeParams["application_name"] = Application
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("coordination database: %w", err)
	}
	return conn, nil
}

// channelOf is the run's notification channel: an identifier of fixed
// length whatever the run's name.
func channelOf(run string) string {
	h := sha256.Sum256([]byte(run))
	return "pgrehearse_coord_" + hex.EncodeToString(h[:8])
}

func (m *Member) register(ctx context.Context) error {
	c := m.cfg
	host, _ := os.Hostname()
	tx, err := m.work.Begin(ctx)
	if err != nil {
		return fmt.Errorf("coordination database: %w", err)
	}
	defer tx.Rollback(context.Background())
	// Concurrent CREATE ... IF NOT EXISTS can still collide: one at a
	// time.
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext('pgrehearse_coord'))"); err != nil {
		return fmt.Errorf("coordination database: %w", err)
	}
	if _, err := tx.Exec(ctx, schema); err != nil {
		return fmt.Errorf("coordination database: create its tables: %w", err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO pgrehearse_coord.runs (run, shards, agree) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
		c.Run, c.Shards, c.Agree); err != nil {
		return fmt.Errorf("coordination database: %w", err)
	}
	var shards int
	var agree string
	var startAt *time.Time
	if err := tx.QueryRow(ctx, "SELECT shards, agree, start_at FROM pgrehearse_coord.runs WHERE run = $1 FOR UPDATE", c.Run).
		Scan(&shards, &agree, &startAt); err != nil {
		return fmt.Errorf("coordination database: %w", err)
	}
	switch {
	case shards != c.Shards:
		return fmt.Errorf("run %q has %d shards, this one was started with %d: every shard of a run must be started alike", c.Run, shards, c.Shards)
	case agree != c.Agree:
		return fmt.Errorf("run %q: shard %d does not replay what the others do (theirs: %s; this one: %s)", c.Run, c.Shard, agree, c.Agree)
	case startAt != nil:
		return fmt.Errorf("run %q started at %s already: a shard cannot join it late (a replay is not resumed; start a new run with another name)", c.Run, startAt.UTC().Format(time.RFC3339Nano))
	}
	var otherHost string
	var alive bool
	err = tx.QueryRow(ctx, `SELECT host, status = 'running' AND EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = m.pid)
		FROM pgrehearse_coord.members m WHERE run = $1 AND shard = $2`, c.Run, c.Shard).Scan(&otherHost, &alive)
	if err == nil && alive {
		return fmt.Errorf("run %q: shard %d is there already (from %s): two processes cannot replay one shard", c.Run, c.Shard, otherHost)
	}
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("coordination database: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO pgrehearse_coord.members (run, shard, pid, host) VALUES ($1, $2, pg_backend_pid(), $3)
		ON CONFLICT (run, shard) DO UPDATE SET pid = excluded.pid, host = excluded.host, joined = clock_timestamp(),
			heartbeat = clock_timestamp(), status = 'running', low = 0`, c.Run, c.Shard, host); err != nil {
		return fmt.Errorf("coordination database: %w", err)
	}
	if _, err := tx.Exec(ctx, "SELECT pg_notify($1, 'joined')", channelOf(c.Run)); err != nil {
		return fmt.Errorf("coordination database: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("coordination database: %w", err)
	}
	return nil
}

// measureClock reads the server's clock_timestamp() n times and keeps
// the sample of least round trip: its offset is the server's time minus
// the local time half-way through the round trip.
func measureClock(ctx context.Context, conn *pgx.Conn, n int) (Clock, error) {
	best := Clock{RTT: -1}
	for range n {
		var server time.Time
		t0 := time.Now()
		if err := conn.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&server); err != nil {
			return Clock{}, err
		}
		t1 := time.Now()
		rtt := t1.Sub(t0)
		if best.RTT < 0 || rtt < best.RTT {
			mid := t0.Add(rtt / 2)
			best = Clock{Offset: server.Sub(mid), RTT: rtt}
		}
	}
	return best, nil
}

// StartServer is the start the Barrier returned, on the coordination
// server's clock: the same in every shard.
func (m *Member) StartServer() time.Time { return m.startServer }

// Clock returns the shard's clock offset against the coordination
// server, measured at Join and again at the Barrier.
func (m *Member) Clock() Clock { return m.clock }

func (m *Member) closeConns() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if m.work != nil {
		m.work.Close(ctx)
	}
	if m.listen != nil {
		m.listen.Close(ctx)
	}
}
