package coord

import (
	"sync"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
)

// Link joins one shard's synchronized replay to the others' through its
// Member: it is the replay engine's Peers (package replay). The shard's
// selector shows it the other shards' events as it reads them (Foreign);
// the replay's dispatcher then has them followed in its tracker, in log
// order among its own (Before), and tells the Member its own progress
// (Advance, Ran).
//
// The events wait in a queue between the selector and the dispatcher:
// a few, except while a replay's pre-flight reads the logs' beginning
// ahead (bounded by its memory bound, times the other shards' share).
type Link struct {
	m       *Member
	shardOf func(session string) int
	cache   *fingerprint.Cache

	mu    sync.Mutex
	queue []queued
	head  int

	fol *Follower
}

type queued struct {
	ev  event.Event
	pos int64
}

// NewLink returns a Link for a shard; shardOf places a session (the
// plan's, or Of). It keeps the events Foreign is shown until Attach
// gives it the shard's Member, which must come before Follow.
func NewLink(shardOf func(session string) int, cache *fingerprint.Cache) *Link {
	return &Link{shardOf: shardOf, cache: cache}
}

// Attach gives the Link its shard's Member.
func (l *Link) Attach(m *Member) { l.m = m }

// Foreign keeps an event of another shard's session, read at pos, for
// the tracker (the shard selector's Foreign). It keeps only what the
// tracker needs of it: ev itself is recycled.
func (l *Link) Foreign(ev *event.Event, pos int64) {
	switch ev.Kind {
	case event.Connect, event.Disconnect, event.Statement, event.Execute:
	default:
		return
	}
	if ev.Session == "" || ev.IsFetch() {
		// A Fetch goes on with a statement already followed.
		return
	}
	c := event.Event{Kind: ev.Kind, Failed: ev.Failed, Time: ev.Time, Session: ev.Session, User: ev.User,
		Database: ev.Database, Duration: ev.Duration, Query: ev.Query}
	if ev.IsExecution() {
		// The tracker orders by row where the parameters give the key
		// (syncdep.RowKey), as the shard that replays the session does:
		// without them, that session's writes by key would reach their
		// table whole here, and the next write of their row in this
		// shard would not wait for them (syncdep.Wait). The reader never
		// reuses what an event points to. A capture's binary parameters
		// go as their text, which the copy, without its wire, keeps.
		c.Params, c.ParamState = ev.TextParams(), ev.ParamState
	} else {
		c.Query = ""
	}
	l.mu.Lock()
	l.queue = append(l.queue, queued{ev: c, pos: pos})
	l.mu.Unlock()
}

// Follow starts following the other shards' sessions in tr (Peers).
func (l *Link) Follow(tr *syncdep.Tracker, database func(ev *event.Event) string, catalog func(ev *event.Event, db string)) {
	l.fol = NewFollower(l.m, tr, l.cache, FollowOptions{ShardOf: l.shardOf, Database: database, Catalog: catalog})
}

// Before follows the other shards' events read before pos; false when
// the Member finished meanwhile.
func (l *Link) Before(pos int64) bool {
	for {
		l.mu.Lock()
		if l.head == len(l.queue) || l.queue[l.head].pos >= pos {
			if l.head == len(l.queue) {
				l.queue, l.head = l.queue[:0], 0
			} else if l.head >= 1024 && 2*l.head >= len(l.queue) {
				n := copy(l.queue, l.queue[l.head:])
				clear(l.queue[n:])
				l.queue, l.head = l.queue[:n], 0
			}
			l.mu.Unlock()
			return true
		}
		q := l.queue[l.head]
		l.queue[l.head] = queued{}
		l.head++
		l.mu.Unlock()
		if l.fol != nil && !l.fol.Event(&q.ev, q.pos) {
			return false
		}
	}
}

// Advance tells the Member this shard read its event at pos (Peers).
func (l *Link) Advance(pos int64, ownCommit bool) { l.m.Advance(pos, ownCommit) }

// Ran tells the Member this shard's commit at pos ran (Peers).
func (l *Link) Ran(pos int64) { l.m.Ran(pos) }
