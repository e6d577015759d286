package replayrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/coord"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/replay"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/shard"
	"github.com/pgrehearse/pgrehearse/internal/source"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
)

// Shards is how one shard of a replay split by session (Config.Selection
// selects the shard) meets the others: the run they share, the start
// barrier, and the coordination database that carries their commits
// across.
type Shards struct {
	// Run names the replay: every shard of it gives the same. It names
	// the rendezvous in the coordination database, and goes into the
	// result's part, so that merge refuses shards of different runs.
	Run string
	// StartAt, when not zero, is the start given to every shard: the
	// barrier, trusting the machines' clocks to agree. Without it the
	// coordination database's rendezvous fixes the start.
	StartAt time.Time
	// Coord, when its DSN is set, joins the shards through the
	// coordination database (package coord): the rendezvous, each
	// shard's clock offset, and, with synchronized sessions, the commits
	// that one shard's statements wait for in another. Run fills its
	// Run, Shard, Shards and Agree.
	Coord coord.Config
	// BarrierTimeout bounds the wait at the rendezvous for the other
	// shards to join; zero means DefaultBarrierTimeout.
	BarrierTimeout time.Duration
	// Plan, when not nil, is the shard plan Selection.Shard follows:
	// the logs must be the ones it was made from.
	Plan *shard.Plan
	// SyncGiven says the synchronization mode (Options.Sync) is the
	// user's choice, not a command's default. A shard without a
	// coordination database cannot keep the answers order (see
	// ShardSyncError): given, that mode is refused; left at the
	// default, the shard runs in the object order and its result says
	// so.
	SyncGiven bool
}

// ShardSyncError is Run's error, before any statement, for a shard asked
// for the answers order without a coordination database. In that order a
// commit waits for the reads of other sessions that preceded it, and a
// read for the commits before it; a shard sees only its own sessions,
// while the other shards' sessions, which do not keep that order with
// its own, hold row locks among them: its waits cross those locks and
// end only at their timeout (issue 77: every shard of a 16-second
// capture degraded after 652 s, 106-166 waits given up each). Instead is
// the mode a shard can keep alone.
type ShardSyncError struct {
	K, Of         int
	Mode, Instead syncdep.Mode
}

func (e *ShardSyncError) Error() string {
	return fmt.Sprintf("shard %d of %d cannot keep the %s order without a coordination database: it sees only its own sessions, and its waits would cross "+
		"the locks of the other shards' sessions and give up at their timeout; replay the shards in the %s order (each keeps its own sessions' commit order), "+
		"or join them through a coordination database, which keeps the %s order across shards", e.K, e.Of, e.Mode, e.Instead, e.Mode)
}

// shardSync is the synchronization mode a shard without a coordination
// database runs in: the answers order it cannot keep is refused when
// given (ShardSyncError), replaced by the object order when it is the
// default. It returns the note that says so, "" when the mode stays.
func shardSync(cfg *Config, sh *Shards, sel source.Shard) (string, error) {
	if sh.Coord.DSN != "" || cfg.Replay.Sync != syncdep.Answers {
		return "", nil
	}
	if sh.SyncGiven {
		return "", &ShardSyncError{K: sel.K, Of: sel.Of, Mode: syncdep.Answers, Instead: syncdep.Object}
	}
	cfg.Replay.Sync = syncdep.Object
	return fmt.Sprintf("shard %d of %d ran in the %s order, not the default %s order: without a coordination database a shard cannot keep the %s order "+
		"(its waits would cross the locks of the other shards' sessions and give up at their timeout); a coordination database keeps it across shards",
		sel.K, sel.Of, syncdep.Object, syncdep.Answers, syncdep.Answers), nil
}

// PlanMismatchError is Run's error when the logs are not the ones the
// shard plan was made from.
type PlanMismatchError struct{ Plan, Logs string }

func (e *PlanMismatchError) Error() string {
	return fmt.Sprintf("the shard plan was made from other logs (%s) than these (%s): make the plan from the logs the shards replay", e.Plan, e.Logs)
}

// checkPlan checks that the input is the plan's: the same files, by
// size and content hash.
func (s *shardRun) checkPlan(set *source.Set) error {
	if s == nil || s.cfg.Plan == nil {
		return nil
	}
	in := set.Input()
	planned := &results.Input{}
	for _, f := range s.cfg.Plan.Input.Files {
		planned.Files = append(planned.Files, results.InputFile{Name: f.Name, Size: f.Size, Hash: f.Hash})
	}
	if !planned.Same(in) {
		name := func(in *results.Input) string {
			var names []string
			if in != nil {
				for _, f := range in.Files {
					names = append(names, fmt.Sprintf("%s, %d bytes", f.Name, f.Size))
				}
			}
			return strings.Join(names, "; ")
		}
		return &PlanMismatchError{Plan: name(planned), Logs: name(in)}
	}
	return nil
}

// DefaultBarrierTimeout is how long a shard waits at the rendezvous for
// the others: long enough for a scheduler to place every pod.
const DefaultBarrierTimeout = 10 * time.Minute

// BarrierError is Run's error when the shards did not meet: one did not
// join in time, left, or replays something else.
type BarrierError struct{ Err error }

func (e *BarrierError) Error() string { return e.Err.Error() }
func (e *BarrierError) Unwrap() error { return e.Err }

// A wait for another shard's commit asks its owner, a *coord.Peer, why it
// was released and whether the shard made progress.
var (
	_ replay.SyncGiver      = (*coord.Peer)(nil)
	_ replay.SyncProgressor = (*coord.Peer)(nil)
)

// shardRun is a run's part in a split replay.
type shardRun struct {
	cfg    *Shards
	sel    source.Shard
	first  atomic.Int64
	link   *coord.Link
	member *coord.Member
	start  time.Time
	// syncNote says the shard runs in another synchronization mode than
	// the default, and why (shardSync).
	syncNote string
}

// prepareShards checks the shard's options and sets the hooks the
// selection and the engine need: the origin of the shared schedule, and
// the other shards' events for cross-shard synchronization. Nil when the
// run is not a shard.
func prepareShards(cfg *Config) (*shardRun, error) {
	sel := &cfg.Selection.Shard
	if !sel.Splits() {
		if cfg.Shards != nil && (cfg.Shards.Coord.DSN != "" || !cfg.Shards.StartAt.IsZero()) {
			return nil, &OptionsError{Err: errors.New("a start barrier or a coordination database is for the shards of a replay split in several")}
		}
		return nil, nil
	}
	sh := cfg.Shards
	if sh == nil {
		sh = &Shards{}
	}
	paced := cfg.Replay.Speed > 0 && !cfg.Replay.DryRun
	if paced && sh.StartAt.IsZero() && sh.Coord.DSN == "" {
		return nil, &OptionsError{Err: fmt.Errorf("shard %d of %d at speed %g needs a start barrier shared by every shard (a start time, or a rendezvous in a coordination database): "+
			"without one each shard's schedule starts when its process does, and the shards do not replay one workload", sel.K, sel.Of, cfg.Replay.Speed)}
	}
	if sh.Coord.DSN != "" && sh.Run == "" {
		return nil, &OptionsError{Err: errors.New("shards that meet in a coordination database need a run name, the same for every shard")}
	}
	note, err := shardSync(cfg, sh, *sel)
	if err != nil {
		return nil, &OptionsError{Err: err}
	}
	if note != "" && cfg.Warn != nil && !cfg.Replay.DryRun {
		cfg.Warn(note)
	}
	s := &shardRun{cfg: sh, sel: *sel, syncNote: note}
	sel.First = &s.first
	cfg.Replay.Origin = func() int64 {
		o := s.first.Load()
		if st := cfg.Selection.Start; st > o {
			o = st
		}
		return o
	}
	if sh.Coord.DSN != "" && cfg.Replay.Sync != syncdep.Off && !cfg.Replay.DryRun && cfg.Replay.Multiply <= 1 {
		s.link = coord.NewLink(s.sel.ShardOf, cfg.Replay.Cache)
		cfg.Replay.Peers = s.link
	}
	cfg.Replay.OthersUnseen = s.link == nil
	// The roles and databases other shards' sessions create: the
	// pre-flight does not check their logins before they exist.
	var mu sync.Mutex
	created := map[string]bool{}
	cfg.Replay.CreatedElsewhere = func(name string) bool {
		mu.Lock()
		defer mu.Unlock()
		return created[name]
	}
	sel.Foreign = func(ev *event.Event, pos int64) {
		if ev.IsExecution() && !ev.Failed {
			if names := replay.CreatedBy(ev.Query); len(names) > 0 {
				mu.Lock()
				for _, n := range names {
					created[n] = true
				}
				mu.Unlock()
			}
		}
		if s.link != nil {
			s.link.Foreign(ev, pos)
		}
	}
	s.sel = *sel
	return s, nil
}

// join registers the shard in the coordination database, when there is
// one; set is the opened input, which every shard must share.
func (s *shardRun) join(ctx context.Context, cfg *Config, set *source.Set) error {
	if s == nil || s.cfg.Coord.DSN == "" {
		return nil
	}
	cc := s.cfg.Coord
	cc.Run, cc.Shard, cc.Shards = s.cfg.Run, s.sel.K, s.sel.Of
	cc.Agree = agreement(cfg, set, s.sel)
	m, err := coord.Join(ctx, cc)
	if err != nil {
		return &BarrierError{Err: err}
	}
	s.member = m
	if s.link != nil {
		s.link.Attach(m)
	}
	return nil
}

// agreement is what every shard of a run must replay alike: the input,
// the split, the pace, the synchronization and the selection.
func agreement(cfg *Config, set *source.Set, sh source.Shard) string {
	var b strings.Builder
	if in := set.Input(); in != nil {
		for _, f := range in.Files {
			fmt.Fprintf(&b, "file %d %s; ", f.Size, f.Hash)
		}
	}
	sel := cfg.Selection
	fmt.Fprintf(&b, "plan %q; speed %g; sync %s; window %d..%d; databases %v; users %v; applications %v",
		sh.Plan, cfg.Replay.Speed, cfg.Replay.Sync, sel.Start, sel.End, sel.Databases, sel.Users, sel.Applications)
	return b.String()
}

// barrier waits for the other shards and returns the start, which r
// then keeps. Without a coordination database the given start is the
// barrier (or, at speed 0, none).
func (s *shardRun) barrier(ctx context.Context, r *replay.Replayer) error {
	if s == nil {
		return nil
	}
	s.start = s.cfg.StartAt
	if s.member != nil {
		timeout := s.cfg.BarrierTimeout
		if timeout <= 0 {
			timeout = DefaultBarrierTimeout
		}
		at, err := s.member.Barrier(ctx, timeout)
		if err != nil {
			return &BarrierError{Err: err}
		}
		if s.start.IsZero() {
			s.start = at
		}
	}
	if !s.start.IsZero() {
		r.SetStart(s.start)
	}
	return nil
}

// fail tells the other shards this one failed before or during its run:
// its commits will not come.
func (s *shardRun) fail() {
	if s == nil || s.member == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.member.Finish(ctx, false)
	s.member = nil
}

// finish ends the shard's coordination (ok: every commit of it ran or
// was lost to a fault, none is left unread) and writes what the shard
// did into its result.
func (s *shardRun) finish(cfg *Config, res *results.Result, ok bool) {
	if s == nil {
		return
	}
	p := res.Part
	p.Run = s.cfg.Run
	var st *coord.Stats
	var startServer time.Time
	if s.member != nil {
		stats := s.member.Stats()
		st, startServer = &stats, s.member.StartServer()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := s.member.Finish(ctx, ok); err != nil && cfg.Warn != nil {
			cfg.Warn(fmt.Sprintf("shard %d could not tell the others it finished: %v", s.sel.K, err))
		}
		cancel()
		s.member = nil
	}
	switch {
	case !s.cfg.StartAt.IsZero():
		p.Barrier = &results.Barrier{Kind: results.BarrierStartAt, At: results.Time(s.cfg.StartAt.UnixMicro())}
	case st != nil:
		p.Barrier = &results.Barrier{Kind: results.BarrierRendezvous, At: results.Time(startServer.UnixMicro())}
	}
	if res.Replay == nil {
		return
	}
	host, _ := os.Hostname()
	sr := results.ShardRun{Shard: s.sel.K, Host: host, Statements: res.Statements.Total, WallSeconds: res.WallSeconds,
		CPUSeconds: res.ClientCPUSeconds, Cores: runtime.NumCPU(), MaxRSSBytes: maxRSS(), Incomplete: res.IncompleteReasons}
	if res.Lag != nil {
		p99 := res.Lag.P99
		sr.LagP99MS = &p99
	}
	if res.LagSources != nil {
		ls := *res.LagSources
		sr.LagSources = &ls
	}
	sr.ReplayerBound = sr.IsReplayerBound(float64(cfg.Replay.MaxLag.Microseconds()) / 1000)
	if st != nil {
		sr.Clock = &results.ShardClock{OffsetMS: float64(st.Clock.Offset.Microseconds()) / 1000, RTTMS: float64(st.Clock.RTT.Microseconds()) / 1000}
		sr.LostShards = st.Lost
	}
	res.Shards = []results.ShardRun{sr}
	if sy := res.Sync; sy != nil && s.syncNote != "" {
		sy.Notes = append(sy.Notes, s.syncNote)
	}
	if sy := res.Sync; sy != nil && sy.Mode != results.SyncOff {
		if s.link != nil {
			sy.Scope = results.SyncAcrossShards
			if len(st.Lost) > 0 {
				sy.Notes = append(sy.Notes, fmt.Sprintf("shards %v were lost during the replay: %d waits for their commits gave up (%s) and ran without them",
					st.Lost, sy.ShardLost, results.SyncGiveUpShardLost))
			}
		} else {
			sy.Scope = results.SyncWithinShard
			sy.Notes = append(sy.Notes, fmt.Sprintf("shard %d of %d synchronized its own sessions only: statements that depended on other shards' commits did not wait for them (no coordination database), and a differing answer is not blamed on the target's data",
				s.sel.K, s.sel.Of))
		}
	}
}

// maxRSS is the most memory the process held, in bytes; 0 where unknown.
func maxRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024 // kB on Linux
}
