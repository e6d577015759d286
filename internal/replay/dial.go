package replay

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// dial connects, trying again while the server's listen queue is full.
// A unix socket refuses a connection with EAGAIN instead of queueing it
// when the postmaster's backlog (twice its backends, at most
// net.core.somaxconn) is full, as it is when thousands of sessions open
// within a second: libpq would give up, but the original clients got
// through, so the replay waits for the postmaster to catch up. Attempts
// pass the target's gate (see dialGate), so a storm of sessions waits here
// instead of retrying a full queue. ctx bounds the whole of it, waits
// included; with the DSN's connect_timeout, which pgconn applies to each
// host, so does the most pgconn could take for one attempt.
func (r *Replayer) dial(ctx context.Context, cfg *pgconn.Config) (*pgconn.PgConn, error) {
	if cfg.ConnectTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(1+len(cfg.Fallbacks))*cfg.ConnectTimeout)
		defer cancel()
	}
	key := net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
	backoff := time.Millisecond
	var refusal error
	for {
		g, err := dialGates.acquire(ctx, key)
		if err != nil {
			if refusal != nil {
				return nil, refusal
			}
			return nil, fmt.Errorf("waiting behind other connections to a full listen queue: %w", err)
		}
		conn, err := pgconn.ConnectConfig(ctx, cfg)
		refused := errors.Is(err, syscall.EAGAIN)
		dialGates.release(key, g, err == nil, refused)
		if !refused || ctx.Err() != nil {
			return conn, err
		}
		r.c.connectRetries.Add(1)
		refusal = err
		// The gate paces the retries while attempts are in flight; the
		// backoff paces them when none are (the queue is full of others').
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, refusal
		case <-t.C:
		}
		backoff = min(2*backoff, 100*time.Millisecond)
	}
}

// dialGates holds a gate per target address. A listen queue belongs to
// the server's socket, not to one replay, so replays in one process share
// it.
var dialGates = gateSet{m: map[string]*dialGate{}}

// gateSet guards its gates with one lock: an attempt takes milliseconds,
// so a lock taken twice per attempt is never contended for long.
type gateSet struct {
	mu sync.Mutex
	m  map[string]*dialGate
}

// dialGate bounds the connection attempts in flight to one address, AIMD
// like TCP's congestion window. There is no limit until an attempt is
// refused with EAGAIN: a remote target, or a local one that keeps up, is
// never made to wait. A refusal proves the listen queue full with what is
// in flight, so the limit drops to half of that: the queue still holds
// half a backlog of connections (the postmaster never starves), and the
// sessions beyond wait here, woken one by one as attempts finish, instead
// of each retrying a full queue every 100 ms. Each connection made raises
// the limit by one, so it climbs back to the backlog, probes it with one
// refusal and halves again; a gate with nothing in flight and no one
// waiting is dropped, so a target that caught up has no limit again.
type dialGate struct {
	inflight int
	limit    int
	waiters  []chan struct{} // first come, first served
}

// acquire waits for a slot to attempt a connection to key, until ctx ends.
func (s *gateSet) acquire(ctx context.Context, key string) (*dialGate, error) {
	s.mu.Lock()
	g := s.m[key]
	if g == nil {
		g = &dialGate{limit: math.MaxInt}
		s.m[key] = g
	}
	if g.inflight < g.limit && len(g.waiters) == 0 {
		g.inflight++
		s.mu.Unlock()
		return g, nil
	}
	ch := make(chan struct{})
	g.waiters = append(g.waiters, ch)
	s.mu.Unlock()
	select {
	case <-ch:
		return g, nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-ch: // admitted meanwhile: hand the slot on
		g.inflight--
	default:
		g.waiters = slices.DeleteFunc(g.waiters, func(c chan struct{}) bool { return c == ch })
	}
	s.admit(key, g)
	return nil, ctx.Err()
}

// release ends an attempt acquired from g: connected, refused with
// EAGAIN, or neither (which says nothing about the queue).
func (s *gateSet) release(key string, g *dialGate, connected, refused bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case refused:
		g.limit = min(g.limit, max(1, g.inflight/2))
	case connected && g.limit < math.MaxInt:
		g.limit++
	}
	g.inflight--
	s.admit(key, g)
}

// admit lets waiters in while the limit allows, and drops an idle gate.
func (s *gateSet) admit(key string, g *dialGate) {
	for len(g.waiters) > 0 && g.inflight < g.limit {
		close(g.waiters[0])
		g.waiters = g.waiters[1:]
		g.inflight++
	}
	if g.inflight == 0 && len(g.waiters) == 0 && s.m[key] == g {
		delete(s.m, key)
	}
}
