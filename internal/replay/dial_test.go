package replay

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
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
