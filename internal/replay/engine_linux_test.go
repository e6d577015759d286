package replay

import (
	"bytes"
	"context"
	"errors"
	"net"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgrehearse/pgrehearse/internal/logread"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

// TestEngineDetaches: every connection a session opens on an engine is
// taken off Go's netpoller before its first statement (engineConn.detach). Left on it, each answer
// and each read the server makes of a statement also wakes an idle
// runtime thread in the netpoller's epoll; the replay's results are the
// same, only its CPU shows it, so this counts.
func TestEngineDetaches(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	var l testLog
	const sessions = 3
	for range sessions {
		s := l.session("postgres", "postgres", 0)
		for i := range 50 {
			s.query(time.Duration(i)*time.Millisecond, time.Microsecond, "SELECT 1")
		}
		s.disconnect(time.Second)
	}
	path := l.write(t)
	// On one engine, and dealt to two in turn (2 and 1).
	for _, engines := range []int{1, 2} {
		res, r := replayKept(t, path, Options{Target: c.DSN("postgres"), Speed: 0, Sessions: SessionsEngine, Engines: engines}, source.Selection{})
		if len(r.engines) != engines {
			t.Fatalf("the replay ran on %d engines, want %d", len(r.engines), engines)
		}
		if res.Statements.Executed != sessions*50 || res.Statements.Failed != 0 {
			t.Fatalf("%d engines: executed %d statements, %d failed, want %d and 0 (total %d, skipped %v, sessions %+v, incomplete %q)",
				engines, res.Statements.Executed, res.Statements.Failed, sessions*50, res.Statements.Total, res.Statements.Skipped, res.Sessions, res.Incomplete)
		}
		var per []int64
		total := int64(0)
		for _, e := range r.engines {
			per = append(per, e.detached.Load())
			total += e.detached.Load()
		}
		if total != sessions {
			t.Errorf("%d engines: %d of the %d connections were taken off Go's netpoller", engines, total, sessions)
		}
		if engines == 2 && (per[0] != 2 || per[1] != 1) {
			t.Errorf("two engines: connections %v, want [2 1] (dealt in turn)", per)
		}
	}
}

// TestEngineDetachAfterBackgroundRead: when one of pgconn's writes takes
// more than 15 ms (its slow-write timer), pgconn reads the socket on a
// goroutine of its own meanwhile, and that read can still be waiting
// when Connect returns, the answers Connect waited for having come to it
// before pgconn told it to stop. Taken off Go's netpoller then, the
// socket that read waited on was closed, pgconn kept the read's error
// for the session's first statement, and the replay counted that
// statement as lost to a broken connection: TestEngineDetaches, under
// load, executed 149 of its 150 statements, one lost ("use of closed
// network connection"). Forced here: the connection's startup message
// is written, but its write returns only once the background read has
// had the server's whole answer and waits for more. The first statement
// after detachConn runs.
func TestEngineDetachAfterBackgroundRead(t *testing.T) {
	functionalCase(t)
	var h *heldWrite
	var ec *engineConn
	conn := engineConnect(t, func(e *engine, nc net.Conn) (net.Conn, error) {
		h = &heldWrite{Conn: nc, raw: nc.(syscall.Conn), changed: make(chan struct{}, 1), hold: true}
		ec, _ = e.wrapConn(h, nil).(*engineConn)
		return ec, nil
	})
	ctx := context.Background()
	if ec == nil {
		t.Fatal("the connection was not put under the engine")
	}
	if h.timedOut {
		t.Fatal("pgconn read no answer on a goroutine of its own while its startup message's write was held: this test no longer forces the race")
	}
	if err := detachConn(ctx, conn, ec, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if !ec.detached {
		t.Error("the socket was not taken off Go's netpoller")
	}
	if err := exchangeQuery(ctx, conn, "SELECT 1"); err != nil {
		t.Fatalf("the first statement after the detach: %v", err)
	}
}

// exchangeQuery sends query as an exchange sends it (wire.go) and reads
// the answers to its ReadyForQuery; an error is the send's, a read's or
// the server's.
func exchangeQuery(ctx context.Context, conn *pgconn.PgConn, query string) error {
	f := conn.Frontend()
	f.SendQuery(&pgproto3.Query{String: query})
	if err := f.Flush(); err != nil {
		return err
	}
	for {
		msg, err := conn.ReceiveMessage(ctx)
		if err != nil {
			return err
		}
		if m, ok := msg.(*pgproto3.ErrorResponse); ok {
			return errors.New(m.Message)
		}
		if _, ok := msg.(*pgproto3.ReadyForQuery); ok {
			return nil
		}
	}
}

// TestEnginePrepareAfterDetach: pgconn's own calls that the replay makes
// on a connection already taken off Go's netpoller (Prepare and
// Deallocate, in session.prepare) arm pgconn's slow-write timer as
// Connect does, and can return with its read of the socket still
// waiting on a goroutine of its own. On the engine, the session's next
// exchange would then wait on the engine's thread for that read, which
// waits in poll(2): every session of the engine held; and the
// descriptor could be closed under it. Forced as in
// TestEngineDetachAfterBackgroundRead, for the first write of each step
// (Prepare's; Deallocate's, whose left read the Prepare after it would
// end): once session.prepare returns, no read waits, and statements run
// after it. Close is TestEngineCloseWaitsForPlainRead's.
func TestEnginePrepareAfterDetach(t *testing.T) {
	functionalCase(t)
	var h *heldWrite
	var ec *engineConn
	conn := engineConnect(t, func(e *engine, nc net.Conn) (net.Conn, error) {
		// Above the engine's socket this time: its writes, once
		// detached, are the engine's own.
		ec, _ = e.wrapConn(nc, nil).(*engineConn)
		if ec == nil {
			return nil, errors.New("the connection was not put under the engine")
		}
		h = &heldWrite{Conn: ec, changed: make(chan struct{}, 1)}
		return h, nil
	})
	ctx := context.Background()
	if err := detachConn(ctx, conn, ec, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if !ec.detached {
		t.Fatal("the socket was not taken off Go's netpoller")
	}
	s := &session{conn: conn, ec: ec}
	for _, step := range []struct{ what, name, query string }{
		{"Prepare", "s1", "SELECT 1"},
		{"Deallocate and Prepare (the name reused for another query)", "s1", "SELECT 2"},
		{"Prepare", "s2", "SELECT 3"},
	} {
		h.arm()
		if err := s.prepare(ctx, step.name, step.query, nil); err != nil {
			t.Fatalf("%s: %v", step.what, err)
		}
		if h.timedOut {
			t.Fatalf("%s: pgconn read no answer on a goroutine of its own while its write was held: this test no longer forces the race", step.what)
		}
		if h.pending() {
			t.Errorf("%s: a read of pgconn's still waits on the detached socket once session.prepare returned", step.what)
		}
		if err := exchangeQuery(ctx, conn, "EXECUTE "+step.name); err != nil {
			t.Fatalf("the statement after %s: %v", step.what, err)
		}
	}
}

// TestEngineCloseWaitsForPlainRead: a read of a detached socket outside
// an exchange (pgconn's on a goroutine of its own, left waiting by a
// slow write) ends when the socket is closed, before Close returns and
// the descriptor's number can go to another socket: such a read, going
// on, would take another session's answers.
func TestEngineCloseWaitsForPlainRead(t *testing.T) {
	e := newEngine()
	if e == nil {
		t.Fatal("no engine on Linux")
	}
	defer e.close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer := <-accepted
	if peer == nil {
		t.Fatal("no connection accepted")
	}
	defer peer.Close()
	ec, _ := e.wrapConn(nc, nil).(*engineConn)
	if ec == nil {
		t.Fatal("the connection was not put under the engine")
	}
	if err := ec.detach(); err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() {
		_, err := ec.Read(make([]byte, 16))
		read <- err
	}()
	for ec.plainIn.Load() == 0 {
		runtime.Gosched()
	}
	if err := ec.Close(); err != nil {
		t.Fatal(err)
	}
	if n := ec.plainIn.Load(); n != 0 {
		t.Fatalf("Close returned with %d reads of the descriptor under way", n)
	}
	if err := <-read; err == nil {
		t.Fatal("the read of a closed socket returned no error")
	}
}

// heldWrite is a connection whose first write (or the first after arm),
// once written, returns only when a read (pgconn's in the background: it
// is the only reader then) has had a ReadyForQuery and waits in the next
// read, or after 10 s (timedOut).
type heldWrite struct {
	net.Conn
	raw     syscall.Conn
	changed chan struct{}

	mu                sync.Mutex
	hold              bool   // the next write is held
	read              []byte // what the reads returned
	entered, returned int    // reads
	timedOut          bool
}

func (h *heldWrite) SyscallConn() (syscall.RawConn, error) { return h.raw.SyscallConn() }

func (h *heldWrite) note(f func()) {
	h.mu.Lock()
	f()
	h.mu.Unlock()
	select {
	case h.changed <- struct{}{}:
	default:
	}
}

func (h *heldWrite) Read(p []byte) (int, error) {
	h.note(func() { h.entered++ })
	n, err := h.Conn.Read(p)
	h.note(func() { h.read, h.returned = append(h.read, p[:max(n, 0)]...), h.returned+1 })
	return n, err
}

// arm holds the next write, as the first.
func (h *heldWrite) arm() {
	h.mu.Lock()
	h.hold, h.read = true, nil
	h.mu.Unlock()
}

// pending reports whether a read waits.
func (h *heldWrite) pending() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.entered > h.returned
}

// waiting reports whether a read waits after a ReadyForQuery was read.
func (h *heldWrite) waiting() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.read
	ready := len(r) >= 6 && r[len(r)-6] == 'Z' && bytes.Equal(r[len(r)-5:len(r)-1], []byte{0, 0, 0, 5})
	return ready && h.entered > h.returned
}

func (h *heldWrite) Write(p []byte) (int, error) {
	n, err := h.Conn.Write(p)
	h.mu.Lock()
	held := h.hold
	h.hold = false
	h.mu.Unlock()
	if !held || err != nil {
		return n, err
	}
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for !h.waiting() {
		select {
		case <-h.changed:
		case <-timeout.C:
			h.note(func() { h.timedOut = true })
			return n, err
		}
	}
	return n, err
}

// engineConnect starts a throwaway server and an engine, and connects
// to the server, its connection, once dialled, put under the engine by
// wrap as the test needs; the connection and the engine are closed when
// the test ends.
func engineConnect(t *testing.T, wrap func(e *engine, nc net.Conn) (net.Conn, error)) *pgconn.PgConn {
	t.Helper()
	c := pgclustertest.StartT(t, pgcluster.Options{})
	e := newEngine()
	if e == nil {
		t.Fatal("no engine on Linux")
	}
	t.Cleanup(e.close)
	cfg, err := pgconn.ParseConfig(c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	dial := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return wrap(e, nc)
	}
	conn, err := pgconn.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// TestEnginePaced: a paced replay runs on the engine, its sessions woken
// at their statements' times by the loop's timerfd (task.sleepUntil):
// every statement of pacingLog runs, never ahead of the schedule, and a
// stop in the middle ends the replay with the rest skipped as
// interrupted, promptly, though every session is parked for a time to
// come; the loop waited on Go's netpoller throughout. Speed 2 (5 s); the
// stop after 1.5 s of another run.
func TestEnginePaced(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	const span = 10 * time.Second
	path := pacingLog(t, span)
	start := time.Now()
	res, r := replayKept(t, path, Options{Target: c.DSN("postgres"), Speed: 2, Sessions: SessionsEngine}, source.Selection{})
	took := time.Since(start)
	if len(r.engines) != 1 {
		t.Fatalf("the paced replay ran on %d engines, want 1", len(r.engines))
	}
	if r.engines[0].epc == nil {
		t.Error("the engine's loop waited in a blocking epoll_wait of its own, not on Go's netpoller (engine.pollable)")
	}
	if res.Statements.Executed != pacingStatements(span) || res.Statements.Failed != 0 {
		t.Fatalf("executed %d, failed %d, want %d and 0 (skipped %v)", res.Statements.Executed, res.Statements.Failed, pacingStatements(span), res.Statements.Skipped)
	}
	if want := 5 * time.Second; took < want-want/50 {
		t.Errorf("took %v, faster than the schedule's %v", took, want)
	}
	if res.Lag == nil {
		t.Error("a paced replay on the engine kept no lag")
	}

	rd, err := logread.Open(path, logread.Options{Prefix: testPrefix})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	r, err = New(Options{Target: c.DSN("postgres"), Speed: 2, Sessions: SessionsEngine})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(1500*time.Millisecond, cancel)
	start = time.Now()
	res, err = r.Run(ctx, context.Background(), selected(source.Selection{}, rd))
	if err != nil {
		t.Fatal(err)
	}
	checkInvariant(t, res)
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("stopped after 1.5 s, the replay ended after %v", took)
	}
	if !res.Partial || res.Statements.Skipped[SkipInterrupted] == 0 || res.Statements.Executed == 0 || res.Statements.Executed >= pacingStatements(span) {
		t.Errorf("partial %v, executed %d, skipped %v: want partial, some executed and the rest interrupted", res.Partial, res.Statements.Executed, res.Statements.Skipped)
	}
}
