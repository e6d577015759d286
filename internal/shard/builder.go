package shard

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
)

// Options of a plan.
type Options struct {
	// Shards is the number of shards, at least 1.
	Shards int
	// Force puts the given sessions in the given shards, whatever the
	// balance (for tests: producers and consumers set apart).
	Force map[string]int
	// Slack is how much more than an even share a shard may take so
	// that dependent sessions stay together: 0.05 (the default) lets a
	// shard hold 5% more than 1/Shards of the work.
	Slack float64
	// MaxSessions bounds the sessions the plan places one by one;
	// later ones are placed by hash (Of). Default DefaultMaxSessions.
	MaxSessions int
	// MaxEdges bounds the pairs of dependent sessions kept; beyond, new
	// pairs are only counted. Default DefaultMaxEdges.
	MaxEdges int
	// Cache fingerprints the statements; nil makes one.
	Cache *fingerprint.Cache
}

// Defaults of Options. Measured on a realistic log, a session costs the
// Builder some 1.3 KB with its share of dependent pairs: a log that
// reaches the bounds needs well under 1 GB, whatever its length.
const (
	DefaultMaxSessions = 500_000
	DefaultMaxEdges    = 2_000_000
	DefaultSlack       = 0.05
	// maxStatements bounds each database's cache of statement analyses.
	maxStatements = 100_000
	// maxRelations bounds the relation names; beyond, names share one id.
	maxRelations = 1 << 20
	// maxTxWrites bounds the relations one open transaction keeps; past
	// it the transaction counts as writing everything.
	maxTxWrites = 256
)

// Builder reads the events of a log, once, and makes a Plan. Its methods
// are for one goroutine.
type Builder struct {
	o     Options
	cache *fingerprint.Cache
	dbs   map[string]map[string]*stmtInfo
	rels  map[string]uint32

	// Per relation id, the last commit that wrote it; lastAny the last
	// commit that may have written anything; lastCommit the last one.
	lastWriter []writer
	lastAny    writer
	lastCommit writer
	seq        uint64

	sessions []session
	index    map[string]int32     // tracked session id -> index
	hashed   map[string]*hashedTx // open sessions past MaxSessions
	nhashed  int64
	loads    []Load // of the hashed sessions, by shard

	edges     map[uint64]int64
	deps      int64 // every dependency found
	fixedDeps int64 // between two hashed sessions
	fixedX    int64 // of those, across shards
	untracked int64
	events    int64
}

// writer is a commit: the node of its session (see Builder.node) and its
// place in commit order (0: none).
type writer struct {
	node int32
	who  int64 // the session: its index, or for a hashed one a number past them
	seq  uint64
}

type session struct {
	id          string
	stmts, busy int64
	forced      int32 // -1: not forced
	tx          txState
}

type hashedTx struct {
	node int32
	who  int64
	tx   txState
}

type txState struct {
	inBlock, aborted bool
	writeAll         bool
	writes           []uint32
}

func (t *txState) reset() { t.writes, t.writeAll = t.writes[:0], false }

func (t *txState) empty() bool { return len(t.writes) == 0 && !t.writeAll }

// stmtInfo is what one normalized statement does, with relation ids.
type stmtInfo struct {
	control       syncdep.Control
	chain         bool
	touch, write  []uint32
	opaque, reads bool // reads: it may read anything (opaque or ReadAll)
}

// NewBuilder returns a Builder.
func NewBuilder(o Options) (*Builder, error) {
	if o.Shards < 1 {
		return nil, fmt.Errorf("a plan needs at least 1 shard, not %d", o.Shards)
	}
	for id, k := range o.Force {
		if k < 0 || k >= o.Shards {
			return nil, fmt.Errorf("session %q forced into shard %d: shards are numbered from 0 to %d", id, k, o.Shards-1)
		}
	}
	if o.Slack <= 0 {
		o.Slack = DefaultSlack
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxEdges <= 0 {
		o.MaxEdges = DefaultMaxEdges
	}
	c := o.Cache
	if c == nil {
		c = fingerprint.NewCache(0)
	}
	b := &Builder{o: o, cache: c, dbs: map[string]map[string]*stmtInfo{}, rels: map[string]uint32{},
		index: map[string]int32{}, hashed: map[string]*hashedTx{}, edges: map[uint64]int64{},
		loads: make([]Load, o.Shards)}
	return b, nil
}

// pseudo is the node of the hashed sessions of shard k: they are placed
// already, and dependencies on them pull a session toward k.
func (b *Builder) pseudo(k int) int32 { return int32(b.o.MaxSessions + k) }

// isPseudo reports whether node stands for a shard's hashed sessions,
// and which shard.
func (b *Builder) isPseudo(node int32) (int, bool) {
	if int(node) >= b.o.MaxSessions {
		return int(node) - b.o.MaxSessions, true
	}
	return 0, false
}

// Add reads one event. Events of pgrehearse's own sessions, and those
// without a session, are left out.
func (b *Builder) Add(ev *event.Event) {
	if ev.Session == "" || ev.IsOwn() {
		return
	}
	b.events++
	switch ev.Kind {
	case event.Connect:
		b.lookup(ev.Session) // a session that runs nothing still counts
	case event.Disconnect:
		node, _, tx := b.lookup(ev.Session)
		tx.reset()
		tx.inBlock, tx.aborted = false, false
		if _, ok := b.isPseudo(node); ok {
			delete(b.hashed, ev.Session)
		}
	case event.Statement, event.Execute:
		b.exec(ev)
	}
}

// lookup returns the node of a session, who it is (see writer) and its
// transaction state, making them at its first event.
func (b *Builder) lookup(id string) (int32, int64, *txState) {
	if i, ok := b.index[id]; ok {
		return i, int64(i), &b.sessions[i].tx
	}
	if h, ok := b.hashed[id]; ok {
		return h.node, h.who, &h.tx
	}
	// Forced sessions past MaxSessions are placed by their force, as
	// hashed ones are by their hash.
	forced, isForced := b.o.Force[id]
	if len(b.sessions) < b.o.MaxSessions {
		id = strings.Clone(id) // not the reader's buffer
		s := session{id: id, forced: -1}
		if isForced {
			s.forced = int32(forced)
		}
		i := int32(len(b.sessions))
		b.sessions = append(b.sessions, s)
		b.index[id] = i
		return i, int64(i), &b.sessions[i].tx
	}
	k := Of(id, b.o.Shards)
	if isForced {
		k = forced
	}
	b.loads[k].Sessions++
	b.nhashed++
	h := &hashedTx{node: b.pseudo(k), who: int64(b.o.MaxSessions) + b.nhashed}
	b.hashed[strings.Clone(id)] = h
	return h.node, h.who, &h.tx
}

func (b *Builder) exec(ev *event.Event) {
	node, who, tx := b.lookup(ev.Session)
	busy := max(ev.Duration, 0)
	if k, ok := b.isPseudo(node); ok {
		b.loads[k].Statements++
		b.loads[k].BusyMS += float64(busy) / 1000
	} else {
		s := &b.sessions[node]
		s.stmts++
		s.busy += busy
	}
	stmts := b.dbs[ev.Database]
	if stmts == nil {
		stmts = map[string]*stmtInfo{}
		b.dbs[ev.Database] = stmts
	}
	var seen [8]int64 // writers already counted for this event
	nseen := 0
	depend := func(w writer) {
		if w.seq == 0 || w.who == who {
			return
		}
		for _, s := range seen[:nseen] {
			if s == w.who {
				return
			}
		}
		if nseen < len(seen) {
			seen[nseen] = w.who
			nseen++
		}
		b.depend(node, w.node)
	}
	for _, it := range b.cache.Get(ev.Query) {
		info := b.info(stmts, ev.Database, it, ev.Query)
		switch info.control {
		case syncdep.TxBegin:
			tx.inBlock = true
		case syncdep.TxCommit, syncdep.TxPrepare:
			// A prepared transaction counts as committed by its
			// session: COMMIT PREPARED follows soon, if anywhere.
			if !tx.aborted {
				b.commit(node, who, tx)
			}
			tx.reset()
			tx.aborted, tx.inBlock = false, info.chain && info.control == syncdep.TxCommit
		case syncdep.TxRollback:
			tx.reset()
			tx.aborted, tx.inBlock = false, info.chain
		case syncdep.TxNone:
			if info.reads {
				depend(b.lastCommit)
			}
			for _, r := range info.touch {
				w := b.lastWriter[r]
				if b.lastAny.seq > w.seq {
					w = b.lastAny
				}
				depend(w)
			}
			if info.opaque {
				tx.writeAll = true
			}
			for _, r := range info.write {
				if len(tx.writes) >= maxTxWrites {
					tx.writeAll = true
					break
				}
				if !slices.Contains(tx.writes, r) {
					tx.writes = append(tx.writes, r)
				}
			}
		}
	}
	if ev.Failed {
		if tx.inBlock {
			tx.aborted = true
		} else {
			tx.reset()
		}
	}
	if !tx.inBlock && !tx.empty() {
		b.commit(node, who, tx)
		tx.reset()
	}
}

// commit records that node's transaction committed.
func (b *Builder) commit(node int32, who int64, tx *txState) {
	if tx.empty() {
		return
	}
	b.seq++
	w := writer{node: node, who: who, seq: b.seq}
	for _, r := range tx.writes {
		b.lastWriter[r] = w
	}
	if tx.writeAll {
		b.lastAny = w
	}
	b.lastCommit = w
}

// depend counts a dependency of node a on a commit of node b.
func (b *Builder) depend(a, c int32) {
	b.deps++
	ka, pa := b.isPseudo(a)
	kc, pc := b.isPseudo(c)
	if pa && pc {
		b.fixedDeps++
		if ka != kc {
			b.fixedX++
		}
		return
	}
	lo, hi := min(a, c), max(a, c)
	key := uint64(uint32(lo))<<32 | uint64(uint32(hi))
	if _, ok := b.edges[key]; !ok && len(b.edges) >= b.o.MaxEdges {
		b.untracked++
		return
	}
	b.edges[key]++
}

// info analyzes a normalized statement of a database, once; text is the
// logged text it is a statement of. What the statement does is the one
// classifier's (fingerprint.Class), parsed once per statement text.
func (b *Builder) info(stmts map[string]*stmtInfo, db string, it fingerprint.Item, text string) *stmtInfo {
	if x, ok := stmts[it.Query]; ok {
		return x
	}
	x := &stmtInfo{}
	if !it.Unparsed {
		st := it.Class(text)
		x.control, x.chain = st.Tx, st.Chain
		x.opaque = st.Opaque
		x.reads = st.Opaque || st.ReadAll
		for _, n := range st.Touch {
			x.touch = append(x.touch, b.rel(db, n))
		}
		for _, w := range st.Write {
			x.write = append(x.write, b.rel(db, w.Name))
		}
		slices.Sort(x.touch)
		x.touch = slices.Compact(x.touch)
	}
	if len(stmts) >= maxStatements {
		clear(stmts)
	}
	stmts[it.Query] = x
	return x
}

// rel interns a relation name of a database. Unqualified names are
// taken as they are: "orders" and "public.orders" are two relations to
// the plan (it only loses some affinity).
func (b *Builder) rel(db string, n syncdep.Name) uint32 {
	key := db + "\x00" + n.Schema + "." + n.Name
	if id, ok := b.rels[key]; ok {
		return id
	}
	if len(b.rels) >= maxRelations {
		return maxRelations - 1
	}
	id := uint32(len(b.rels))
	b.rels[key] = id
	for int(id) >= len(b.lastWriter) {
		b.lastWriter = append(b.lastWriter, writer{})
	}
	return id
}

// ErrNoSessions is returned by Plan when the log held no session.
var ErrNoSessions = errors.New("the log holds no session to place")

// Plan places the sessions and returns the plan, with input as its
// Input. The Builder may not be used after.
func (b *Builder) Plan(input Input) (*Plan, error) {
	n := b.o.Shards
	if len(b.sessions) == 0 && sumSessions(b.loads) == 0 {
		return nil, ErrNoSessions
	}
	// Weights: the mean of a session's shares of statements and of
	// busy time (statements only when the log has no durations).
	var totS, totB float64
	for _, s := range b.sessions {
		totS += float64(s.stmts)
		totB += float64(s.busy)
	}
	for _, l := range b.loads {
		totS += float64(l.Statements)
		totB += l.BusyMS * 1000
	}
	nsessions := float64(len(b.sessions)) + float64(sumSessions(b.loads))
	weight := func(stmts, busy float64) float64 {
		switch {
		case totS == 0:
			// Sessions without statements: an even count.
			return 1 / nsessions
		case totB == 0:
			return stmts / totS
		}
		return (stmts/totS + busy/totB) / 2
	}
	nodes := len(b.sessions)
	w := make([]float64, nodes)
	for i, s := range b.sessions {
		w[i] = weight(float64(s.stmts), float64(s.busy))
	}
	load := make([]float64, n)
	for k, l := range b.loads {
		load[k] = weight(float64(l.Statements), l.BusyMS*1000)
		if totS == 0 {
			load[k] = float64(l.Sessions) / nsessions
		}
	}
	capacity := (1 + b.o.Slack) / float64(n)

	adj := b.adjacency(nodes)
	assign := make([]int32, nodes)
	for i := range assign {
		assign[i] = -1
	}
	shardOf := func(node int32) int32 {
		if k, ok := b.isPseudo(node); ok {
			return int32(k)
		}
		return assign[node]
	}
	gains := make([]int64, n)
	gain := func(i int) {
		clear(gains)
		for _, e := range adj.of(i) {
			if k := shardOf(e.node); k >= 0 {
				gains[k] += e.w
			}
		}
	}
	forced := 0
	for i, s := range b.sessions {
		if s.forced >= 0 {
			assign[i] = s.forced
			load[s.forced] += w[i]
			forced++
		}
	}
	order := make([]int, 0, nodes)
	for i, s := range b.sessions {
		if s.forced < 0 {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(w[y], w[x]) })
	pl := placement{n: n, w: w, load: load, capacity: capacity, assign: assign, gains: gains, gain: gain}
	pl.first(order)
	pl.refine(order)

	p := &Plan{Version: PlanVersion, Kind: PlanKind, Shards: n, Input: input, Forced: forced,
		Sessions: make(map[string]int, nodes)}
	p.Loads = make([]Load, n)
	for k := range p.Loads {
		l := b.loads[k]
		p.Loads[k] = Load{Shard: k, Sessions: l.Sessions, Statements: l.Statements, BusyMS: l.BusyMS}
		p.Hashed += l.Sessions
	}
	for i, s := range b.sessions {
		k := assign[i]
		p.Sessions[s.id] = int(k)
		l := &p.Loads[k]
		l.Sessions++
		l.Statements += s.stmts
		l.BusyMS += float64(s.busy) / 1000
	}
	for k := range p.Loads {
		l := &p.Loads[k]
		l.Share = weight(float64(l.Statements), l.BusyMS*1000)
		if totS == 0 {
			l.Share = float64(l.Sessions) / nsessions
		}
	}
	p.Dependencies = b.dependencies(shardOf, n)
	p.ID = p.contentID()
	return p, nil
}

// dependencies counts the dependencies between sessions that the
// placement shardOf (of n shards) leaves across shards, and those that
// hashing the sessions' ids (Of) would.
func (b *Builder) dependencies(shardOf func(node int32) int32, n int) Dependencies {
	d := Dependencies{Total: b.deps, Untracked: b.untracked, Cross: b.fixedX}
	hashX := b.fixedX
	hashOf := make([]int32, len(b.sessions))
	for i, s := range b.sessions {
		hashOf[i] = int32(Of(s.id, n))
	}
	hashShard := func(node int32) int32 {
		if k, ok := b.isPseudo(node); ok {
			return int32(k)
		}
		return hashOf[node]
	}
	for key, c := range b.edges {
		x, y := int32(key>>32), int32(uint32(key))
		if shardOf(x) != shardOf(y) {
			d.Cross += c
		}
		if hashShard(x) != hashShard(y) {
			hashX += c
		}
	}
	if known := d.Total - d.Untracked; known > 0 {
		d.CrossShare = float64(d.Cross) / float64(known)
		d.HashCrossShare = float64(hashX) / float64(known)
	}
	return d
}

// placement is Plan's placing of sessions on n shards.
type placement struct {
	n int
	// w is each session's weight, load each shard's, capacity the most
	// a shard may take.
	w, load  []float64
	capacity float64
	// assign is each session's shard.
	assign []int32
	// gain(i) sets gains to the weight of session i's dependencies on
	// each shard.
	gains []int64
	gain  func(i int)
}

// first places each session of order on the shard with room that it
// depends on most, the least loaded at a tie; on the least loaded when
// none has room.
func (pl *placement) first(order []int) {
	gains, load, w := pl.gains, pl.load, pl.w
	for _, i := range order {
		pl.gain(i)
		best := -1
		for k := range pl.n {
			if load[k]+w[i] > pl.capacity+1e-12 {
				continue
			}
			if best < 0 || gains[k] > gains[best] || gains[k] == gains[best] && load[k] < load[best] {
				best = k
			}
		}
		if best < 0 {
			best = slices.Index(load, slices.Min(load))
		}
		pl.assign[i] = int32(best)
		load[best] += w[i]
	}
}

// refine moves a session of order to the shard it depends on most, where
// the balance allows, until nothing moves (8 passes at most).
func (pl *placement) refine(order []int) {
	gains, load, w := pl.gains, pl.load, pl.w
	for pass := 0; pass < 8; pass++ {
		moved := false
		for _, i := range order {
			pl.gain(i)
			cur := int(pl.assign[i])
			best := cur
			for k := range pl.n {
				if k != cur && gains[k] > gains[best] && load[k]+w[i] <= pl.capacity+1e-12 {
					best = k
				}
			}
			if best != cur {
				load[cur] -= w[i]
				load[best] += w[i]
				pl.assign[i] = int32(best)
				moved = true
			}
		}
		if !moved {
			break
		}
	}
}

func sumSessions(ls []Load) int64 {
	var n int64
	for _, l := range ls {
		n += l.Sessions
	}
	return n
}

// csr is the dependency graph between placed sessions, both ways, in
// compressed rows.
type csr struct {
	start []int
	to    []edge
}

type edge struct {
	node int32
	w    int64
}

func (c *csr) of(i int) []edge { return c.to[c.start[i]:c.start[i+1]] }

func (b *Builder) adjacency(nodes int) *csr {
	deg := make([]int, nodes+1)
	for key := range b.edges {
		x, y := int32(key>>32), int32(uint32(key))
		if _, ok := b.isPseudo(x); !ok {
			deg[x+1]++
		}
		if _, ok := b.isPseudo(y); !ok {
			deg[y+1]++
		}
	}
	for i := 1; i <= nodes; i++ {
		deg[i] += deg[i-1]
	}
	c := &csr{start: slices.Clone(deg), to: make([]edge, deg[nodes])}
	fill := deg[:nodes]
	for key, wt := range b.edges {
		x, y := int32(key>>32), int32(uint32(key))
		if _, ok := b.isPseudo(x); !ok {
			c.to[fill[x]] = edge{y, wt}
			fill[x]++
		}
		if _, ok := b.isPseudo(y); !ok {
			c.to[fill[y]] = edge{x, wt}
			fill[y]++
		}
	}
	return c
}
