//go:build linux

package proxy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
	"golang.org/x/sys/unix"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestLoopWakesFromSleep: the event loop sleeps in epoll_wait of its own
// epoll instance (loop_linux.go), and what the rest of the process asks
// of it comes through the eventfd in its epoll set. A session accepted
// while the loop sleeps is relayed by it, and Serve's stop, while the
// loop sleeps with its sessions open, wakes it: it hands them back, their
// connections are closed, the sessions recorded as open at the end, and
// Serve returns.
func TestLoopWakesFromSleep(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	r := startProxy(t, Config{Upstream: c.DSN("postgres")})
	query := func(fe *pgproto3.Frontend) {
		t.Helper()
		fe.Send(&pgproto3.Query{String: "SELECT 1"})
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
		receiveUntil(t, fe, isReady)
	}
	_, first := rawSession(t, r.addr)
	query(first)
	ep := loopOf(t, r.p, 1)
	sleeping := fmt.Sprintf("the event loop (epoll descriptor %d) sleeping in epoll_pwait", ep)
	// A session enters the loop of its id (one loop per P but one):
	// sessions are opened until one enters the first one's, each
	// while that loop sleeps.
	opened := 1
	for id := uint64(2); ; id++ {
		poll(t, sleeping, func() bool { return sleepsIn(t, ep) })
		_, fe := rawSession(t, r.addr)
		opened++
		query(fe)
		if loopOf(t, r.p, id) == ep {
			break
		}
	}
	poll(t, sleeping, func() bool { return sleepsIn(t, ep) })
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	ended := r.sink.waitEnds(t, opened)
	for id, end := range checkSessions(t, ended) {
		if end != capture.EndOpen {
			t.Errorf("session %d ended %v, want open", id, end)
		}
	}
}

// loopOf polls until session id is in an event loop, and returns that
// loop's epoll descriptor.
func loopOf(t *testing.T, p *Proxy, id uint64) int {
	t.Helper()
	ep := -1
	poll(t, fmt.Sprintf("session %d in an event loop", id), func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		for l := range p.links {
			l.mu.Lock()
			s := l.sess
			l.mu.Unlock()
			if s == nil || s.id != id {
				continue
			}
			if ls := s.loop.Load(); ls != nil {
				ep = ls.l.ep
				return true
			}
		}
		return false
	})
	return ep
}

// sleepsIn says whether a thread of this process is in epoll_pwait on
// ep without a timeout, from /proc/self/task/*/syscall (the system call
// number, then its arguments in hex).
func sleepsIn(t *testing.T, ep int) bool {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/syscall")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d %#x ", unix.SYS_EPOLL_PWAIT, ep)
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread exited
		}
		fields := strings.Fields(string(b))
		if strings.HasPrefix(string(b), want) && len(fields) > 4 && fields[4] == "0xffffffffffffffff" {
			return true
		}
	}
	return false
}
