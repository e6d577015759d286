package coord

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
)

func TestMain(m *testing.M) {
	if os.Getenv("COORD_TEST_CHILD") != "" {
		child()
		return
	}
	os.Exit(runTests(m))
}

// runTests starts one cluster for the package's tests; a test that needs
// it fails when it could not start.
func runTests(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	c, err := pgcluster.Start(ctx, pgcluster.Options{})
	cancel()
	if err != nil {
		clusterErr = err
	} else {
		cluster = c
		defer c.Stop()
	}
	return m.Run()
}

// child is a shard in another process, for the test of a killed one: it
// joins, passes the barrier, reads commits of its own that never run,
// says "ready" and waits to be killed.
func child() {
	k, _ := strconv.Atoi(os.Getenv("COORD_TEST_SHARD"))
	n, _ := strconv.Atoi(os.Getenv("COORD_TEST_SHARDS"))
	m, err := Join(context.Background(), Config{DSN: os.Getenv("COORD_TEST_DSN"), Run: os.Getenv("COORD_TEST_RUN"),
		Shard: k, Shards: n, Lead: 100 * time.Millisecond})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	if _, err := m.Barrier(context.Background(), time.Minute); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	for pos := int64(1); pos <= 100; pos++ {
		m.Advance(pos, pos%10 == 0)
	}
	fmt.Println("ready")
	select {}
}

var (
	cluster    *pgcluster.Cluster
	clusterErr error
)

// dsn is the package cluster's.
func dsn(t testing.TB) string {
	if cluster == nil {
		t.Fatalf("pgcluster: %v", clusterErr)
	}
	return cluster.DSN("postgres")
}

var runs atomic.Int64

func newRun(t testing.TB) string {
	return fmt.Sprintf("%s-%d-%d", t.Name(), os.Getpid(), runs.Add(1))
}

func join(t testing.TB, cfg Config) *Member {
	t.Helper()
	m, err := Join(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !m.finished.Load() {
			m.Finish(context.Background(), true)
		}
	})
	return m
}

// group joins n shards of a new run and passes the barrier together.
func group(t *testing.T, n int, tweak func(*Config)) []*Member {
	t.Helper()
	run := newRun(t)
	ms := make([]*Member, n)
	for k := range n {
		cfg := Config{DSN: dsn(t), Run: run, Shard: k, Shards: n, Agree: "plan x", Lead: 50 * time.Millisecond}
		if tweak != nil {
			tweak(&cfg)
		}
		ms[k] = join(t, cfg)
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for k, m := range ms {
		wg.Go(func() { _, errs[k] = m.Barrier(context.Background(), time.Minute) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return ms
}

func TestBarrierStartsEveryShardTogether(t *testing.T) {
	run := newRun(t)
	const n = 4
	starts := make([]time.Time, n)
	clocks := make([]Clock, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	before := time.Now()
	for k := range n {
		wg.Go(func() {
			m, err := Join(context.Background(), Config{DSN: dsn(t), Run: run, Shard: k, Shards: n, Agree: "a", Lead: 2 * time.Second})
			if err != nil {
				errs[k] = err
				return
			}
			defer m.Finish(context.Background(), true)
			if c := m.Clock(); c.RTT <= 0 || c.Offset > 50*time.Millisecond || c.Offset < -50*time.Millisecond {
				errs[k] = fmt.Errorf("clock %+v: a local server's offset should be near 0 with a positive round trip", c)
			}
			starts[k], errs[k] = m.Barrier(context.Background(), time.Minute)
			clocks[k] = m.Clock()
		})
	}
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			t.Fatalf("shard %d: %v", k, err)
		}
	}
	for k, s := range starts {
		// One machine, one clock: the starts differ by the offsets'
		// errors, each within half its round trip.
		bound := (clocks[k].RTT+clocks[0].RTT)/2 + time.Millisecond
		if d := s.Sub(starts[0]); d > bound || d < -bound {
			t.Errorf("shard %d starts %v after shard 0, more than half their round trips allow (%v)", k, d, bound)
		}
	}
	if d := starts[0].Sub(before); d < 2*time.Second || d > time.Minute {
		t.Errorf("start %v after the first join, want the lead (2s) after the last", d)
	}
}

func TestJoinRefuses(t *testing.T) {
	run := newRun(t)
	base := Config{DSN: dsn(t), Run: run, Shard: 0, Shards: 2, Agree: "plan 1; speed 1"}
	join(t, base)
	for _, c := range []struct {
		name string
		cfg  func(Config) Config
		want string
	}{
		{"shard count", func(c Config) Config { c.Shard, c.Shards = 1, 3; return c }, "has 2 shards"},
		{"agreement", func(c Config) Config { c.Shard, c.Agree = 1, "plan 2; speed 1"; return c }, "does not replay what the others do"},
		{"twice", func(c Config) Config { return c }, "shard 0 is there already"},
		{"bad shard", func(c Config) Config { c.Shard = 2; return c }, "numbered from 0 to 1"},
		{"no run", func(c Config) Config { c.Run = ""; return c }, "needs a name"},
	} {
		_, err := Join(context.Background(), c.cfg(base))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
	// A shard that comes after the start is refused.
	second := base
	second.Shard = 1
	ms := []*Member{join(t, base.withRun(run+"-late")), join(t, func() Config { c := base.withRun(run + "-late"); c.Shard = 1; return c }())}
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Go(func() {
			if _, err := m.Barrier(context.Background(), time.Minute); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	ms[1].Finish(context.Background(), false)
	late := base.withRun(run + "-late")
	late.Shard = 1
	if _, err := Join(context.Background(), late); err == nil || !strings.Contains(err.Error(), "cannot join it late") {
		t.Errorf("a late shard: %v", err)
	}
}

func (c Config) withRun(run string) Config { c.Run = run; return c }

func TestBarrierNamesMissingShards(t *testing.T) {
	run := newRun(t)
	m := join(t, Config{DSN: dsn(t), Run: run, Shard: 1, Shards: 3, Poll: 50 * time.Millisecond})
	_, err := m.Barrier(context.Background(), 500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "shard 0, 2 did not join") {
		t.Errorf("barrier: %v, want it to name shards 0 and 2", err)
	}
}

// releaser records when a foreign commit was released.
type releaser struct {
	pos  int64
	ran  *sync.Map // pos -> true once the owner ran it
	done chan struct{}
	once sync.Once
	bad  *atomic.Int64
}

func newReleaser(pos int64, ran *sync.Map, bad *atomic.Int64) *releaser {
	return &releaser{pos: pos, ran: ran, done: make(chan struct{}), bad: bad}
}

// releasedAtOnce fails t, saying why, if r is not released already.
func releasedAtOnce(t *testing.T, r *releaser, why string) {
	t.Helper()
	select {
	case <-r.done:
	default:
		t.Error(why)
	}
}

func (r *releaser) Done() {
	r.once.Do(func() {
		if _, ok := r.ran.Load(r.pos); !ok {
			r.bad.Add(1)
		}
		close(r.done)
	})
}

func TestCommitsCrossShards(t *testing.T) {
	for _, listen := range []bool{true, false} {
		t.Run(fmt.Sprintf("listen=%v", listen), func(t *testing.T) {
			ms := group(t, 2, func(c *Config) { c.NoListen = !listen; c.Poll = 20 * time.Millisecond })
			a, b := ms[0], ms[1]
			var ran sync.Map
			var bad atomic.Int64
			const events = 2000
			var rs []*releaser
			var own []int64
			for pos := int64(1); pos <= events; pos++ {
				commit := pos%3 == 0
				a.Advance(pos, commit)
				if commit {
					own = append(own, pos)
					r := newReleaser(pos, &ran, &bad)
					rs = append(rs, r)
					b.Foreign(0, pos, r)
				}
				b.Advance(pos, false)
			}
			// Run A's commits out of order, a few at a time; each
			// released commit must have run before.
			rand.Shuffle(len(own), func(i, j int) { own[i], own[j] = own[j], own[i] })
			for _, p := range own {
				ran.Store(p, true)
				a.Ran(p)
			}
			deadline := time.After(30 * time.Second)
			for _, r := range rs {
				select {
				case <-r.done:
				case <-deadline:
					t.Fatalf("commit at %d not released (stats %+v)", r.pos, b.Stats())
				}
			}
			if bad.Load() != 0 {
				t.Errorf("%d commits released before they ran", bad.Load())
			}
			// The count follows the releases.
			pollUntil(5*time.Second, func() bool { return b.Stats().Released >= int64(len(rs)) })
			// b's polls (every 20 ms) may have released every commit
			// before its listener read any of a's notifications: on a
			// busy machine make test-busy saw 0 received. A release
			// means a published its watermark, and the same statement
			// notified: the notifications arrive, and the wait for them
			// is the race retried, not a failure.
			pollUntil(10*time.Second, func() bool { return !listen || b.Stats().Received > 0 })
			st := b.Stats()
			if st.Released != int64(len(rs)) || st.ReleasedLost != 0 || len(st.Lost) != 0 {
				t.Errorf("stats %+v: want %d released, none lost", st, len(rs))
			}
			if listen && st.Received == 0 || !listen && st.Received != 0 {
				t.Errorf("listen=%v but %d notifications received", listen, st.Received)
			}
			// One published late is released at once.
			r := newReleaser(3, &ran, &bad)
			b.Foreign(0, 3, r)
			releasedAtOnce(t, r, "a commit that ran already was held")
		})
	}
}

func TestOutOfOrderCommitReleasedBeforeLow(t *testing.T) {
	ms := group(t, 2, nil)
	a, b := ms[0], ms[1]
	var ran sync.Map
	var bad atomic.Int64
	a.Advance(10, true)
	a.Advance(20, true)
	r10 := newReleaser(10, &ran, &bad)
	r20 := newReleaser(20, &ran, &bad)
	b.Foreign(0, 10, r10)
	b.Foreign(0, 20, r20)
	ran.Store(int64(20), true)
	a.Ran(20)
	select {
	case <-r20.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the commit at 20 ran but was not released while the one at 10 had not")
	}
	select {
	case <-r10.done:
		t.Fatal("the commit at 10 was released before it ran")
	default:
	}
	ran.Store(int64(10), true)
	a.Ran(10)
	select {
	case <-r10.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the commit at 10 was not released")
	}
}

func TestForeignBlocksPastMaxPending(t *testing.T) {
	ms := group(t, 2, func(c *Config) { c.MaxPending = 4 })
	a, b := ms[0], ms[1]
	var ran sync.Map
	var bad atomic.Int64
	for pos := int64(1); pos <= 4; pos++ {
		a.Advance(pos, true)
		b.Foreign(0, pos, newReleaser(pos, &ran, &bad))
	}
	a.Advance(5, true)
	fifth := make(chan bool)
	go func() { fifth <- b.Foreign(0, 5, newReleaser(5, &ran, &bad)) }()
	select {
	case <-fifth:
		t.Fatal("a fifth commit was held past MaxPending 4")
	case <-time.After(200 * time.Millisecond):
	}
	ran.Store(int64(1), true)
	a.Ran(1)
	select {
	case ok := <-fifth:
		if !ok {
			t.Error("Foreign returned false")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Foreign still blocked after a commit was released")
	}
	if st := b.Stats(); st.MaxPending != 4 || st.FullWaits == 0 {
		t.Errorf("stats %+v: want at most 4 held, and a wait", st)
	}
}

func TestFailedShardIsLost(t *testing.T) {
	ms := group(t, 2, func(c *Config) { c.Poll = 20 * time.Millisecond })
	a, b := ms[0], ms[1]
	var ran sync.Map
	var bad atomic.Int64
	a.Advance(1, true)
	r := newReleaser(1, &ran, &bad)
	b.Foreign(0, 1, r)
	if why := b.Peer(0).SyncGiveUp(); why != "" {
		t.Fatalf("a live shard gives %q", why)
	}
	if err := a.Finish(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the failed shard's commit was not released")
	}
	if why := b.Peer(0).SyncGiveUp(); why != ReasonShardLost {
		t.Errorf("give-up reason %q, want %q", why, ReasonShardLost)
	}
	if st := b.Stats(); st.ReleasedLost != 1 || len(st.Lost) != 1 || st.Lost[0] != 0 {
		t.Errorf("stats %+v: want shard 0 lost with 1 commit", st)
	}
}

func TestKilledShardIsLost(t *testing.T) {
	run := newRun(t)
	d := dsn(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "COORD_TEST_CHILD=1", "COORD_TEST_SHARD=0", "COORD_TEST_SHARDS=2",
		"COORD_TEST_DSN="+d, "COORD_TEST_RUN="+run)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	b := join(t, Config{DSN: d, Run: run, Shard: 1, Shards: 2, Lead: 100 * time.Millisecond, Poll: 50 * time.Millisecond})
	if _, err := b.Barrier(context.Background(), time.Minute); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		t.Fatalf("child: %q", line)
	}
	var ran sync.Map
	var bad atomic.Int64
	r := newReleaser(50, &ran, &bad)
	b.Foreign(0, 50, r)
	select {
	case <-r.done:
		t.Fatal("a commit of a live shard that never ran was released")
	case <-time.After(300 * time.Millisecond):
	}
	killed := time.Now()
	cmd.Process.Kill()
	select {
	case <-r.done:
	case <-time.After(DefaultLostAfter + 5*time.Second):
		t.Fatalf("the killed shard's commit was not released (stats %+v)", b.Stats())
	}
	took := time.Since(killed)
	if why := b.Peer(0).SyncGiveUp(); why != ReasonShardLost {
		t.Errorf("give-up reason %q, want %q", why, ReasonShardLost)
	}
	if took > DefaultLostAfter+time.Second {
		t.Errorf("the loss took %v to see", took)
	}
	t.Logf("killed shard seen lost after %v", took.Round(time.Millisecond))
	// Commits registered after the loss are released at once.
	r2 := newReleaser(60, &ran, &bad)
	b.Foreign(0, 60, r2)
	releasedAtOnce(t, r2, "a lost shard's later commit was held")
}

func TestPayloadRoundTrip(t *testing.T) {
	done := make([]int64, 3000)
	for i := range done {
		done[i] = int64(1_000_000 + 7*i)
	}
	ps := progressPayloads(3, 999_999, done)
	if len(ps) < 2 {
		t.Fatalf("3000 positions fit in %d payload", len(ps))
	}
	var got []int64
	for _, p := range ps {
		if len(p) > maxPayload {
			t.Fatalf("payload of %d bytes", len(p))
		}
		k, low, d, ok := parseProgress(p)
		if !ok || k != 3 || low != 999_999 {
			t.Fatalf("parse %q: %d %d %v", p[:40], k, low, ok)
		}
		got = append(got, d...)
	}
	if fmt.Sprint(got) != fmt.Sprint(done) {
		t.Error("positions differ after the round trip")
	}
	for _, bad := range []string{"joined", "start", "p", "p x 1", "p 1 y", "p 1 5 -3", "p -1 5"} {
		if _, _, _, ok := parseProgress(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

func FuzzParseProgress(f *testing.F) {
	f.Add("p 0 10 0 a zz")
	f.Add("joined")
	f.Fuzz(func(t *testing.T, s string) {
		k, low, done, ok := parseProgress(s)
		if !ok {
			return
		}
		for _, d := range done {
			if d < low {
				t.Fatalf("position %d before low %d", d, low)
			}
		}
		if k < 0 {
			t.Fatal("negative shard")
		}
	})
}

func TestBarrierFailsWhenAShardLeaves(t *testing.T) {
	run := newRun(t)
	a := join(t, Config{DSN: dsn(t), Run: run, Shard: 0, Shards: 3})
	b := join(t, Config{DSN: dsn(t), Run: run, Shard: 1, Shards: 3})
	if err := a.Finish(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	_, err := b.Barrier(context.Background(), 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "shard 0 left before the start") {
		t.Errorf("barrier: %v, want shard 0 named as gone", err)
	}
}

func TestRanBeforeAdvanceIsKept(t *testing.T) {
	ms := group(t, 2, nil)
	a, b := ms[0], ms[1]
	var ran sync.Map
	var bad atomic.Int64
	r := newReleaser(7, &ran, &bad)
	b.Foreign(0, 7, r)
	// The session ran the commit before the reader registered it.
	ran.Store(int64(7), true)
	a.Ran(7)
	a.Advance(7, true)
	a.Advance(8, false)
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		t.Fatal("a commit run before Advance registered it was never released")
	}
	if low, _, _ := a.progress(); low != 9 {
		t.Errorf("low watermark %d after everything ran up to 8, want 9", low)
	}
}

// TestFinishedShardWithClosedConnIsNotLost: stopping a shard's worker
// can cancel its query in flight, which closes the work connection; the
// shard must still record that it finished, or the others take it for
// lost (measured in a 3-shard benchmark, where the shard that finished
// first was named failed in the merge). Once a's row says finished, b
// does not take it for lost, though the session the row names has ended
// and its heartbeat has been silent for longer than b allows an ended
// session (twice the heartbeat).
//
// A race the test cannot force: until Finish's new connection has
// written "finished", a's row names an ended session whose heartbeat has
// stopped, which b rightly takes for lost once that silence passes twice
// the heartbeat. With a heartbeat of 20 ms, b did so in 19 of 30 tries on
// a loaded 2-core machine (Finish's reconnection took 40-100 ms). The
// heartbeat is long enough for that to be rare; a try in which b lost a
// before it could see the finished row says so and runs the race again.
func TestFinishedShardWithClosedConnIsNotLost(t *testing.T) {
	const heartbeat, tries = 250 * time.Millisecond, 5
	for try := 1; ; try++ {
		early, lost, silent := finishWithClosedConn(t, heartbeat)
		if len(early) == 0 && len(lost) != 0 {
			t.Fatalf("a finished, yet b lost %v", lost)
		}
		if len(early) == 0 {
			return
		}
		if try == tries {
			t.Fatalf("b lost a before a's row said finished in all %d tries (a's row silent %v before it, last try): the finished row was never checked", tries, silent)
		}
		t.Logf("try %d: b took a for lost before a's row said finished (its session ended, silent for %v, more than b allows: %v): the race was lost, running it again",
			try, silent, 2*heartbeat)
	}
}

// finishWithClosedConn runs two shards, then finishes a after closing
// its work connection. It returns the shards b lost by the time it read
// a's finished row (early), and those it lost once a's heartbeat had been
// silent for more than twice the heartbeat after that (lost); silent is
// how long a's row went without a heartbeat before it said finished.
func finishWithClosedConn(t *testing.T, heartbeat time.Duration) (early, lost []int, silent time.Duration) {
	t.Helper()
	ctx := context.Background()
	ms := group(t, 2, func(c *Config) { c.Poll, c.Heartbeat = 20*time.Millisecond, heartbeat })
	a, b := ms[0], ms[1]
	conn, err := connect(ctx, dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	beat := func() time.Time {
		t.Helper()
		var at time.Time
		if err := conn.QueryRow(ctx, "SELECT heartbeat FROM pgrehearse_coord.members WHERE run = $1 AND shard = $2",
			a.cfg.Run, a.cfg.Shard).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	a.cancel()
	a.wg.Wait()
	last := beat() // the worker's last
	a.work.Close(ctx)
	if err := a.Finish(ctx, true); err != nil {
		t.Fatal(err)
	}
	finished := time.Now()
	silent = beat().Sub(last)
	// b's polls from now on read a's row as finished: two of them
	// started, the first has ended.
	waitPolls(t, b, 2)
	early = b.Stats().Lost
	// And once a's heartbeat has been silent for longer than b allows
	// an ended session.
	for time.Since(finished) <= 2*heartbeat {
		waitPolls(t, b, 1)
	}
	waitPolls(t, b, 2)
	return early, b.Stats().Lost, silent
}

// waitPolls waits until m has started n more polls of the shards' rows.
func waitPolls(t *testing.T, m *Member, n int64) {
	t.Helper()
	from := m.Stats().Polls
	deadline := time.Now().Add(30 * time.Second)
	for m.Stats().Polls < from+n {
		if time.Now().After(deadline) {
			t.Fatalf("shard %d stopped polling", m.cfg.Shard)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPeerProgress: a shard's published moves are what a waiting shard's
// sync wait counts as its progress (Peer.SyncProgress, issue 44): a commit
// of it that ran above its watermark moves it while the awaited one is
// still held, heartbeats alone do not (a shard whose replay is frozen
// still beats), and the awaited commit's run moves it again.
func TestPeerProgress(t *testing.T) {
	ms := group(t, 2, func(c *Config) { c.Poll = 20 * time.Millisecond; c.Heartbeat = 20 * time.Millisecond })
	a, b := ms[0], ms[1]
	var ran sync.Map
	var bad atomic.Int64
	a.Advance(1, true)
	a.Advance(5, true)
	r := newReleaser(1, &ran, &bad)
	b.Foreign(0, 1, r)
	peer := b.Peer(0)
	waitProgress := func(from uint64, what string) uint64 {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); peer.SyncProgress() == from; {
			if time.Now().After(deadline) {
				t.Fatalf("%s: shard 0's progress did not move from %d (stats %+v)", what, from, b.Stats())
			}
			time.Sleep(time.Millisecond) // polling
		}
		return peer.SyncProgress()
	}
	p := waitProgress(0, "the barrier's first watermark")
	ran.Store(int64(5), true)
	a.Ran(5)
	p = waitProgress(p, "a commit above the watermark ran")
	select {
	case <-r.done:
		t.Fatal("the commit at 1 was released before it ran")
	default:
	}
	// Shard 0 beats (every 20 ms, by notification and in its row) with
	// nothing new to say: no progress.
	received := b.Stats().Received
	waitPolls(t, b, 10)
	// On a busy machine ten polls can pass before the listener reads a
	// heartbeat: wait for one, so that the case looks at one.
	pollUntil(10*time.Second, func() bool { return b.Stats().Received != received })
	if got := peer.SyncProgress(); got != p {
		t.Errorf("heartbeats moved shard 0's progress from %d to %d", p, got)
	}
	if b.Stats().Received == received {
		t.Error("no heartbeat of shard 0 came meanwhile: the case did not look")
	}
	ran.Store(int64(1), true)
	a.Ran(1)
	waitProgress(p, "the awaited commit ran")
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the commit at 1 ran but was not released")
	}
}

// pollUntil polls done every millisecond until it holds or d has passed;
// the caller then asserts what it waited for.
func pollUntil(d time.Duration, done func() bool) {
	for end := time.Now().Add(d); !done() && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
}
