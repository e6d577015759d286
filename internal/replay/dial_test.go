package replay

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestDialRetriesFullListenQueue: a unix socket whose listen queue is full
// refuses connections with EAGAIN; the replay tries again (counting each
// try) until its connect timeout, then reports the refusal.
func TestDialRetriesFullListenQueue(t *testing.T) {
	dir, err := os.MkdirTemp("", "pgrehearse-dial")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, ".s.PGSQL.5432")
	fd := fullListener(t, path)
	defer syscall.Close(fd)

	r, err := New(Options{Target: "host=" + dir + " port=5432 user=x dbname=x"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := r.config("x", "x")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	begin := time.Now()
	conn, err := r.dial(ctx, cfg)
	if err == nil {
		conn.Close(context.Background())
		t.Fatal("connected to a socket that accepts nothing")
	}
	if !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want the listen queue's EAGAIN or the deadline", err)
	}
	if n := r.c.connectRetries.Load(); n < 3 {
		t.Errorf("%d retries in %v, want several", n, time.Since(begin))
	}
	if took := time.Since(begin); took < 250*time.Millisecond {
		t.Errorf("gave up after %v, want the connect timeout (300ms)", took)
	}
}

// fullListener listens on a unix socket at path with a backlog of one and
// fills that backlog, so every further connect fails with EAGAIN.
func fullListener(t *testing.T, path string) int {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 1); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		c, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK, 0)
		if err != nil {
			t.Fatal(err)
		}
		err = syscall.Connect(c, &syscall.SockaddrUnix{Name: path})
		t.Cleanup(func() { syscall.Close(c) })
		if errors.Is(err, syscall.EAGAIN) {
			return fd
		}
		if err != nil || i > 100 {
			t.Fatalf("filling the listen queue: %v after %d connections", err, i)
		}
	}
}

// TestDialStormFullListenQueue: 1,000 sessions connect at once to a real
// server whose listen queue holds 244 (twice its 122 backends), closing at
// once so that max_connections does not stop them. All get through, and
// they wait for the queue in the replayer: the uncapped retries made 4,670
// to 8,184 refused attempts here (5 to 8 a session), the gate 8 to 224,
// and by design at most the first burst (n - 244) and a refusal per climb
// of the limit, so fewer than one a session.
func TestDialStormFullListenQueue(t *testing.T) {
	const n = 1000
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{"max_connections": "100"}})
	r, err := New(Options{Target: c.DSN("postgres")})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := r.config(c.User(), "postgres")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := make(chan struct{})
	var wg sync.WaitGroup
	var connected, tooMany atomic.Int64
	begin := time.Now()
	for range n {
		wg.Go(func() {
			<-start
			for {
				conn, err := r.dial(ctx, cfg)
				// The backends of closed connections exit in their own
				// time, and the postmaster forks up to twice
				// max_connections: a burst can find no slot free.
				var pgErr *pgconn.PgError
				if errors.As(err, &pgErr) && pgErr.Code == "53300" {
					tooMany.Add(1)
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				connected.Add(1)
				conn.Close(context.Background())
				return
			}
		})
	}
	close(start)
	wg.Wait()
	retries := r.c.connectRetries.Load()
	t.Logf("%d sessions at once: %d retries, %d refused as too many clients, in %v", n, retries, tooMany.Load(), time.Since(begin))
	if connected.Load() != n {
		t.Errorf("%d of %d sessions connected", connected.Load(), n)
	}
	if retries == 0 {
		t.Error("the listen queue never filled: the test proves nothing")
	}
	if retries >= n {
		t.Errorf("%d attempts refused by the full listen queue, want fewer than one a session (%d)", retries, n)
	}
}

// TestDialGate: the gate lets every attempt through until one is refused,
// then holds the attempts beyond half of those in flight. A wait for a slot
// ends with its context, even while the attempts holding the slots hang,
// and a connection made frees a slot for a waiter and raises the limit.
func TestDialGate(t *testing.T) {
	functionalCase(t)
	synctest.Test(t, func(t *testing.T) {
		s := gateSet{m: map[string]*dialGate{}}
		const key = "gate"
		ctx := context.Background()
		var held []*dialGate
		for range 4 {
			g, err := s.acquire(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, g)
		}
		s.release(key, held[3], false, true) // refused with 4 in flight: limit 2
		s.release(key, held[2], false, false)
		short, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if _, err := s.acquire(short, key); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("acquire with 2 of 2 slots held: %v, want the deadline", err)
		}
		got := make(chan *dialGate, 2)
		for range 2 {
			go func() {
				g, _ := s.acquire(ctx, key)
				got <- g
			}()
		}
		synctest.Wait()
		if len(got) != 0 {
			t.Fatal("admitted past the limit")
		}
		s.release(key, held[1], true, false) // connected: limit 3, 2 slots
		synctest.Wait()
		if len(got) != 2 {
			t.Fatalf("%d of 2 waiters admitted when 2 slots freed", len(got))
		}
		s.release(key, <-got, true, false)
		s.release(key, <-got, true, false)
		s.release(key, held[0], true, false)
		if len(s.m) != 0 {
			t.Errorf("idle gate kept: %+v", s.m[key])
		}
	})
}
