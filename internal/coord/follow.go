package coord

import (
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
)

// Follower follows, in a synchronized replay's syncdep.Tracker, the
// sessions that other shards replay: their transactions get their place
// in the log's commit order, so that this shard's statements wait for
// them as for local ones, and each of their commits (and, in Answers
// mode, each of their statements a commit may wait for: Step.Mark) is
// registered with the Member, which releases it when its shard says it
// ran. Their statements are not replayed here.
//
// It runs on the replay's reader goroutine, the Tracker's, and sees the
// events of the other shards' sessions in log order among this shard's.
type Follower struct {
	m        *Member
	tr       *syncdep.Tracker
	cache    *fingerprint.Cache
	o        FollowOptions
	sessions map[string]*followed
}

type followed struct {
	sx *syncdep.Session
	k  int
}

// FollowOptions say how the replay names what the Follower meets.
type FollowOptions struct {
	// ShardOf is the shard of a session (the plan's, or shard.Of).
	ShardOf func(session string) int
	// Database is the target database of an event's session (after the
	// replay's database map); nil: the logged one.
	Database func(ev *event.Event) string
	// Catalog is called before the first session of a database the
	// Tracker has no catalog for, to set it (the replay reads the
	// target's); nil leaves it to the Tracker (commit mode there).
	Catalog func(ev *event.Event, db string)
}

// NewFollower returns a Follower of other shards' sessions into tr.
func NewFollower(m *Member, tr *syncdep.Tracker, cache *fingerprint.Cache, o FollowOptions) *Follower {
	// In Answers mode, the statements of the sessions followed get
	// their marks, which the Member releases as their shards publish
	// them run (the shards' Advance and Ran count them with the commits).
	tr.FollowRemoteMarks()
	return &Follower{m: m, tr: tr, cache: cache, o: o, sessions: map[string]*followed{}}
}

// Event follows an event of another shard's session, read at position
// pos (its ordinal in the log, as Advance takes it). It returns false
// when the Member finished meanwhile (the replay is stopping).
func (f *Follower) Event(ev *event.Event, pos int64) bool {
	defer f.m.Advance(pos, false)
	if ev.Session == "" {
		return true
	}
	s := f.sessions[ev.Session]
	switch ev.Kind {
	case event.Disconnect:
		if s != nil {
			s.sx.End()
			delete(f.sessions, ev.Session)
		}
		return true
	case event.Connect, event.Statement, event.Execute:
	default:
		return true
	}
	if s == nil {
		db := ev.Database
		if f.o.Database != nil {
			db = f.o.Database(ev)
		}
		if !f.tr.HasDatabase(db) && f.o.Catalog != nil {
			f.o.Catalog(ev, db)
		}
		k := f.o.ShardOf(ev.Session)
		s = &followed{sx: f.tr.Session(db, f.m.Peer(k)), k: k}
		f.sessions[ev.Session] = s
	}
	if !ev.IsExecution() {
		return true
	}
	end := ev.Time
	if ev.Duration >= 0 {
		end += ev.Duration
	}
	step := s.sx.Event(syncdep.Exec{Start: ev.Time, End: end, Items: f.cache.Get(ev.Query), Text: ev.Query, Failed: ev.Failed,
		Params: ev.TextParams(), ParamState: ev.ParamState})
	switch {
	case step.Commit != nil && step.Mark != nil:
		return f.m.Foreign(s.k, pos, both{step.Commit, step.Mark})
	case step.Commit != nil:
		return f.m.Foreign(s.k, pos, step.Commit)
	case step.Mark != nil:
		// Answers mode: a commit of this shard may wait for the
		// statement to have run in its own (see
		// syncdep.Tracker.FollowRemoteMarks); its shard says so as it
		// says its commits ran.
		return f.m.Foreign(s.k, pos, step.Mark)
	}
	return true
}

// both releases a statement that is a commit and a mark (an autocommit
// write in Answers mode) at once: its shard says it ran once for both.
type both [2]Releaser

func (b both) Done() { b[0].Done(); b[1].Done() }

// Following counts the other shards' sessions followed now.
func (f *Follower) Following() int { return len(f.sessions) }
