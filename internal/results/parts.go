package results

import (
	"fmt"
	"slices"
	"time"
)

// Input names what a run read, so that results of the same input are
// known as such (the shards of one replay, the rounds of a rehearsal) and
// results of different inputs are never merged as parts of one.
type Input struct {
	Files []InputFile `json:"files"`
}

// InputFile is one file read: its name as given, its size and a SHA-256
// of its size, its first and its last 64 KiB (of the file as stored,
// compressed or not): the hash a shard plan names its logs by
// (shard.FileHash), so that a result and a plan of the same log agree.
// Standard input has no size (-1) and no hash.
type InputFile struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
	Hash string `json:"head_tail_sha256,omitempty"`
}

// Known reports whether every file of in can be told from another: it
// has a size and hashes.
func (in *Input) Known() bool {
	if in == nil || len(in.Files) == 0 {
		return false
	}
	for _, f := range in.Files {
		if f.Size < 0 || f.Hash == "" {
			return false
		}
	}
	return true
}

// Same reports whether in and o are the same files, by size and content
// hashes, in the same order: names may differ (the parts of a replay run
// on several machines mount the log where each can). It is false when
// either is not Known.
func (in *Input) Same(o *Input) bool {
	if !in.Known() || !o.Known() || len(in.Files) != len(o.Files) {
		return false
	}
	for i, f := range in.Files {
		g := o.Files[i]
		if f.Size != g.Size || f.Hash != g.Hash {
			return false
		}
	}
	return true
}

// Part says which part of its input a result covers: some shards of the
// input's sessions (split by a stable hash of the session id, or by a
// shard plan), a round of a rehearsal. A result without a Part covers its
// whole input.
type Part struct {
	// Shards are the shards this result covers, ascending, each in
	// 0..Of-1: one for a shard's own result, several for a merge.
	Shards []int `json:"shards,omitempty"`
	// Of is how many shards the input's sessions were split into; 0
	// when they were not.
	Of int `json:"of,omitempty"`
	// Plan identifies the shard plan that assigned sessions to shards;
	// empty for the stable hash.
	Plan string `json:"plan,omitempty"`
	// Round is the rehearsal round (1, 2, ...) this run was; 0 outside
	// a rehearsal. With Side, it is the side's round.
	Round int `json:"round,omitempty"`
	// Run names the replay the shards were started as (every shard of
	// it gives the same); empty when not given.
	Run string `json:"run,omitempty"`
	// Barrier is the start the shards met at: the instant every shard's
	// schedule began, and how it was fixed (Barrier.Kind); nil for a
	// shard that met none (speed 0 without one).
	Barrier *Barrier `json:"barrier,omitempty"`
	// Side is the target of a rehearsal round; empty outside one.
	Side Side `json:"side,omitempty"`
	// Load is the load level the workload was replayed at (a headroom
	// step's k); nil: its own load, once.
	Load *Load `json:"load,omitempty"`
}

// LoadBy is how a load level makes k times the workload's load.
type LoadBy string

const (
	// LoadBySpeed: the same sessions at k times the pace.
	LoadBySpeed LoadBy = "speed"
	// LoadByFold: k consecutive slices of the workload overlaid on one
	// window.
	LoadByFold LoadBy = "fold"
)

// Load is a load level: part of a run's identity, so that runs of
// different levels are never compared or merged as if alike.
type Load struct {
	By LoadBy `json:"by"`
	// K is the factor asked of the workload's own load (1: its own).
	K float64 `json:"k"`
}

// Same reports whether l and o are the same level; nil is the
// workload's own load, the same as K 1 by any way.
func (l *Load) Same(o *Load) bool {
	return l.factor() == o.factor() && (l.factor() == 1 || l.By == o.By)
}

func (l *Load) factor() float64 {
	if l == nil || l.K == 0 {
		return 1
	}
	return l.K
}

// String is the level as reports show it: "2x by speed", "1x".
func (l *Load) String() string {
	if l.factor() == 1 {
		return "1x"
	}
	return fmt.Sprintf("%gx by %s", l.K, l.By)
}

// BarrierKind is how the shards of a replay agreed on their start.
type BarrierKind string

// Barrier kinds.
const (
	// BarrierStartAt: a start time given to every shard (their clocks
	// are trusted to agree).
	BarrierStartAt BarrierKind = "start_at"
	// BarrierRendezvous: every shard registered in the coordination
	// database, and the first to see them all fixed the start, on that
	// server's clock.
	BarrierRendezvous BarrierKind = "rendezvous"
)

// Barrier is the start the shards of one replay met at.
type Barrier struct {
	Kind BarrierKind `json:"kind"`
	// At is the start, in µs since the epoch: the given time, or the
	// one the rendezvous fixed, on the coordination server's clock.
	At Time `json:"at"`
}

// Same reports whether b and o are the same start.
func (b *Barrier) Same(o *Barrier) bool {
	if b == nil || o == nil {
		return b == o
	}
	return *b == *o
}

func (b *Barrier) String() string {
	if b == nil {
		return "none"
	}
	return fmt.Sprintf("%s %s", b.Kind, time.UnixMicro(int64(b.At)).UTC().Format(time.RFC3339Nano))
}

// Side is one of a rehearsal's two targets.
type Side string

// Sides.
const (
	// SideControl is the target as production is today.
	SideControl Side = "control"
	// SideCandidate is the target with the change.
	SideCandidate Side = "candidate"
)

// Sharded reports whether p covers some shards of a split input.
func (p *Part) Sharded() bool { return p != nil && p.Of > 1 }

// Whole reports whether p covers every shard of its input, or the input
// was not split.
func (p *Part) Whole() bool {
	if !p.Sharded() {
		return true
	}
	return len(p.Shards) == p.Of
}

// String is "shard 2 of 4", "shards 0, 1 of 4", "round 3", "control round
// 2", or "whole".
func (p *Part) String() string {
	var s string
	switch {
	case p.Sharded() && len(p.Shards) == 1:
		s = fmt.Sprintf("shard %d of %d", p.Shards[0], p.Of)
	case p.Sharded():
		s = fmt.Sprintf("shards %v of %d", p.Shards, p.Of)
	}
	if p != nil && p.Round > 0 {
		if s != "" {
			s += ", "
		}
		if p.Side != "" {
			s += string(p.Side) + " "
		}
		s += fmt.Sprintf("round %d", p.Round)
	}
	if l := p.LoadLevel(); l.factor() != 1 {
		if s == "" {
			s = "whole"
		}
		s += " at " + l.String()
	}
	if s == "" {
		return "whole"
	}
	return s
}

// OtherShards counts what a shard read and left to the other shards: their
// sessions, apart from Filtered (which counts what the run's own window
// and filters left out). Every shard reads the whole input; Read counts
// all of it, so that the parts of a merge can be told apart exactly.
type OtherShards struct {
	// Events, Statements (execution events) and Sessions of the other
	// shards.
	Events     int64 `json:"events"`
	Statements int64 `json:"statements"`
	Sessions   int64 `json:"sessions"`
	// ReadEvents, ReadStatements and ReadSessions are the whole input's,
	// this shard's included.
	ReadEvents     int64 `json:"read_events"`
	ReadStatements int64 `json:"read_statements"`
	ReadSessions   int64 `json:"read_sessions"`
}

// add adds o's counts to c.
func (c *OtherShards) add(o OtherShards) {
	c.Events += o.Events
	c.Statements += o.Statements
	c.Sessions += o.Sessions
	c.ReadEvents += o.ReadEvents
	c.ReadStatements += o.ReadStatements
	c.ReadSessions += o.ReadSessions
}

// SourceCounts is what a source of events accounts for besides the events
// it yields: the lines read, what its selection left out. It flows with the events into the result: analyze and replay ask
// their sources (SourceCounter) once they are read.
type SourceCounts struct {
	// Lines are the lines of the logs read; nil when the source read no
	// log (events from memory, a capture).
	Lines *LineCounts
	// Messages are the records of the captures read; nil when the
	// source read no capture.
	Messages *MessageCounts
	// Filtered counts what the time window and the filters left out.
	Filtered Filtered
	// OtherShards counts the other shards' events, when the source
	// selected a shard; nil otherwise.
	OtherShards *OtherShards
}

// Add adds o's counts to c.
func (c *SourceCounts) Add(o SourceCounts) {
	if o.Lines != nil {
		if c.Lines == nil {
			c.Lines = &LineCounts{Skipped: map[LineSkip]int64{}}
		}
		c.Lines.Add(*o.Lines)
	}
	if o.Messages != nil {
		if c.Messages == nil {
			c.Messages = &MessageCounts{Skipped: map[MessageSkip]int64{}}
		}
		c.Messages.Add(*o.Messages)
	}
	c.Filtered.add(o.Filtered)
	if o.OtherShards != nil {
		if c.OtherShards == nil {
			c.OtherShards = &OtherShards{}
		}
		c.OtherShards.add(*o.OtherShards)
	}
}

// SourceCounter is a source of events that accounts for what it read
// (SourceCounts). Consumers ask once the source is exhausted (or the run
// stopped), from the goroutine that read it.
type SourceCounter interface {
	SourceCounts() SourceCounts
}

// Fill puts c into res: the lines, filtered and other shards' counts.
// What res already counted as filtered (a replay's events it could not
// place in a session) is kept, and c's added.
func (c SourceCounts) Fill(res *Result) {
	if c.Lines != nil {
		l := *c.Lines
		l.Skipped = addCounts(nil, c.Lines.Skipped)
		res.Lines = &l
	}
	if c.Messages != nil {
		m := *c.Messages
		m.Skipped = addCounts(nil, c.Messages.Skipped)
		res.Messages = &m
	}
	res.Filtered.add(c.Filtered)
	if c.OtherShards != nil {
		o := *c.OtherShards
		res.OtherShards = &o
	}
}

// shardsUnion is the sorted union of two shard lists, and whether they
// overlap.
func shardsUnion(a, b []int) ([]int, bool) {
	out := slices.Clone(a)
	overlap := false
	for _, s := range b {
		if slices.Contains(out, s) {
			overlap = true
			continue
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out, overlap
}

// check validates a decoded Part.
func (p *Part) check() error {
	if p.Of < 0 || p.Round < 0 {
		return fmt.Errorf("part: of %d, round %d must not be negative", p.Of, p.Round)
	}
	for i, s := range p.Shards {
		if s < 0 || s >= max(p.Of, 1) || i > 0 && s <= p.Shards[i-1] {
			return fmt.Errorf("part: shards %v are not distinct shards of %d in ascending order", p.Shards, p.Of)
		}
	}
	return nil
}

// LoadLevel is p's load level; nil for a run at its own load.
func (p *Part) LoadLevel() *Load {
	if p == nil {
		return nil
	}
	return p.Load
}
