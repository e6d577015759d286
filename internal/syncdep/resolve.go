package syncdep

import (
	"cmp"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
)

// Effect is what a statement reaches in one database once its catalog is
// applied: the relations it touches (reads or writes) and writes, as
// relation keys. A key is "schema.name" of a relation the catalog knows
// (of the top of its partition or inheritance tree: a partition and its
// parent are one relation here), or "?name" for a name the catalog does
// not have (a table created during the replay, a CTE, a temporary
// table), the same in every schema.
type Effect struct {
	Touch, Write []string
	// Lock lists the relations whose rows it may wait to lock: those it
	// writes, and those it reads FOR UPDATE or FOR SHARE. LockAll: it
	// locks rows of relations it cannot name (without a catalog).
	Lock    []string
	LockAll bool
	// ReadAll: it may read anything, so it waits for every earlier
	// commit (as in commit mode). WriteAll: its transaction may have
	// written anything, so every later statement waits for it.
	ReadAll, WriteAll bool
	// Barrier: a statement of unknown effect by its kind (DDL, DO,
	// CALL...): beyond data, it may change or remove what statements that
	// read nothing new depend on (DROP TABLE after the last reads of a
	// table), so it waits for every statement that ended before it.
	Barrier bool
	// Whole lists the relations it reaches only through their writes
	// of the whole relation, not those of their rows by key (an insert
	// that gives no unique column, in Load mode: see Resolver.fresh).
	Whole []string
	// Rows: of one relation (Rows.Rel), the statement reaches only the
	// row whose primary key its parameters give; that relation is then
	// in neither Touch, Write nor Lock (see RowKey).
	Rows *RowKey
	// Range: of one relation it reads (Range.Rel, in Touch as any
	// other), the statement reads only rows whose primary key is within
	// bounds its parameters give (see KeyRange): what a race is judged
	// by, not what it waits for.
	Range *KeyRange
}

// KeyRange is the rows of one relation a plain SELECT reads, by a range
// of its primary key: a relation whose primary key is one integer
// column, which the SELECT's WHERE bounds by parameters Lo and Hi (0: no
// bound on that side), inclusive.
type KeyRange struct {
	Rel    string
	Lo, Hi int32
}

// RowKey is the row of one relation that a statement reaches, by its
// primary key: the key's columns equal the statement's parameters
// Params, one per column in key order. The statement reads that row
// only (and writes it, with Write; may wait for its lock, with Lock).
//
// A statement gets one only where nothing else of it reaches other rows
// of the relation: a SELECT, UPDATE or DELETE whose WHERE has an equality
// with a parameter for every primary key column; an UPDATE only when it
// assigns no column of a unique index, and the relation has no partial
// or expression unique index nor exclusion constraint; an INSERT of one
// row that gives every key column, into a relation whose only unique
// index is its primary key. Keys of integer, text (with a deterministic
// collation) and uuid columns only: those whose logged text tells equal
// values apart.
type RowKey struct {
	Rel         string
	Params      []int32
	kinds       []keyKind
	Write, Lock bool
	// Shared: its lock is a shared one (SELECT ... FOR SHARE or FOR KEY
	// SHARE), which another session's shared lock of the row does not
	// wait for; a write's and FOR UPDATE's are not.
	Shared bool
	// Insert: it may insert the row (an INSERT, with or without ON
	// CONFLICT).
	Insert bool
	// Fresh: the relation may take fresh inserts (see Resolver.fresh),
	// which no key names: in Load mode their commits are waited for by
	// the statements that may reach the rows they made.
	Fresh bool
	// Seq: the key is one integer column that a sequence fills, which
	// had given no value above SeqLast when the catalog was read (see
	// KeySequence): a key at or below it is no row a fresh insert made
	// during the replay, so a statement by that key need not wait for
	// the fresh inserts.
	Seq     bool
	SeqLast int64
}

// keyKind is how the logged text of a key value is compared.
type keyKind uint8

const (
	keyInt  keyKind = iota + 1 // int2, int4, int8: as a number
	keyText                    // text, varchar: byte for byte
	keyUUID                    // uuid: its 16 bytes
)

// keyKindOf returns how a column of type typ (a pg_type OID) is keyed, 0
// when it cannot be.
func keyKindOf(c IndexColumn) keyKind {
	switch c.Type {
	case 20, 21, 23:
		return keyInt
	case 25, 1043:
		if c.Deterministic {
			return keyText
		}
	case 2950:
		return keyUUID
	}
	return 0
}

// ReadOnly reports whether the effect only reads, and reads nothing whose
// absence fails: it writes and locks nothing, is of known effect, and
// reads no large object (lo_open of one another session has not made yet
// fails, where a read of a table finds fewer rows). In Load mode such a
// statement waits only for the commits that changed the schema.
func (e *Effect) ReadOnly() bool {
	return len(e.Write) == 0 && len(e.Lock) == 0 && !e.WriteAll && !e.LockAll && !e.Barrier &&
		!slices.Contains(e.Touch, largeObjects) && (e.Rows == nil || !e.Rows.Write && !e.Rows.Lock)
}

// Empty reports whether the effect reaches nothing: such a statement
// needs no wait and writes nothing.
func (e *Effect) Empty() bool {
	return len(e.Touch) == 0 && !e.ReadAll && !e.WriteAll
}

// Resolver expands statements through one database's Catalog. A nil
// *Resolver has no catalog: every statement that reaches a relation or
// calls a function reads and writes everything (commit mode), since its
// foreign keys, views and triggers are unknown.
type Resolver struct {
	groups  []group
	byQual  map[Name][]int // relation name, schema-qualified -> groups
	byName  map[string][]int
	funcs   map[Name]fnKind
	fnNames map[string]fnKind // unqualified: the most effectful of every schema's
	builtin map[string]bool
	keyed   map[string]bool // relation keys with a primary key that keys rows
	// freshKeys: the relation keys that may take fresh inserts (see
	// FreshInserts).
	freshKeys map[string]bool
	// fresh: an INSERT that gives no column of any unique index (the
	// keys come from defaults, a sequence) into a relation whose unique
	// indexes are all on plain columns conflicts with no row another
	// session wrote by key, and an UPDATE or DELETE by key of another row
	// cannot reach it: it waits only for the whole relation's writes
	// (which may have reached it, a DELETE by a range) and what it
	// reads elsewhere (a parent by foreign key). Load mode only (see
	// ForLoad): the log's own key of the row it made is another than the
	// target's sequence gives, which object mode's answers would show.
	fresh bool
}

// ForLoad makes r resolve for Load mode (see Resolver.fresh); a nil r
// stays nil.
func (r *Resolver) ForLoad() *Resolver {
	if r != nil {
		r.fresh = true
	}
	return r
}

// group is a relation, with its partitions or inheritance children.
type group struct {
	key    string
	view   bool
	opaque bool  // writing it fires triggers or rules
	bases  []int // a view's relations
	parent []int // groups it references by foreign key
	child  []fkChild

	// What its unique indexes and exclusion constraints tell (see
	// RowKey): its primary key (nil when it has none that can key
	// rows: an inheritance tree's, or of other types), the columns of
	// every unique index, and whether one is partial, on expressions,
	// an exclusion constraint, or on other columns than the key.
	pk          []keyCol
	uniques     int
	uniqueCols  []string
	uniqueOther bool // an index is partial, on expressions or an exclusion constraint
	otherKeys   bool // uniqueOther, or a unique index on other columns than pk
	members     int
	// seq, seqLast: its key is one integer column that a sequence
	// fills (see RowKey.Seq).
	seq     bool
	seqLast int64
}

// freshInserts reports whether an INSERT into gr may be fresh (see
// Resolver.fresh), given the columns it names.
func (gr *group) freshInserts() bool { return gr.uniques > 0 && !gr.uniqueOther }

type keyCol struct {
	name string
	kind keyKind
}

type fkChild struct {
	g                          int
	deleteWrites, updateWrites bool
}

type fnKind uint8

const (
	fnPure   fnKind = iota // reads and writes no table (builtins, immutable)
	fnReads                // may read any table (stable)
	fnOpaque               // may read and write anything (volatile), or unknown
)

// NewResolver indexes c; nil gives the nil Resolver.
func NewResolver(c *Catalog) *Resolver {
	if c == nil {
		return nil
	}
	// Partitions and inheritance children join their parents' group.
	idx := map[uint32]int{}
	for i, rel := range c.Relations {
		idx[rel.OID] = i
	}
	uf := make([]int, len(c.Relations))
	for i := range uf {
		uf[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for uf[i] != i {
			uf[i] = uf[uf[i]]
			i = uf[i]
		}
		return i
	}
	hasParent := make([]bool, len(c.Relations))
	for _, in := range c.Inherits {
		ci, ok1 := idx[in.Child]
		pi, ok2 := idx[in.Parent]
		if !ok1 || !ok2 {
			continue
		}
		hasParent[ci] = true
		uf[find(ci)] = find(pi)
	}
	// The group's key is its top relation's name; with several tops
	// (multiple inheritance), the least.
	r := &Resolver{byQual: map[Name][]int{}, byName: map[string][]int{}, funcs: map[Name]fnKind{}, fnNames: map[string]fnKind{}, builtin: map[string]bool{}}
	gOf := make([]int, len(c.Relations))
	rootG := map[int]int{}
	topName := map[int]Name{}
	for i, rel := range c.Relations {
		root := find(i)
		n := Name{Schema: rel.Schema, Name: rel.Name}
		if !hasParent[i] {
			if t, ok := topName[root]; !ok || cmpName(n, t) < 0 {
				topName[root] = n
			}
		}
	}
	for i, rel := range c.Relations {
		root := find(i)
		g, ok := rootG[root]
		if !ok {
			g = len(r.groups)
			rootG[root] = g
			top, ok := topName[root]
			if !ok {
				top = Name{Schema: c.Relations[root].Schema, Name: c.Relations[root].Name}
			}
			r.groups = append(r.groups, group{key: top.Schema + "." + top.Name})
		}
		gOf[i] = g
		gr := &r.groups[g]
		gr.members++
		gr.view = gr.view || rel.Kind == 'v'
		gr.opaque = gr.opaque || rel.Triggers || rel.Rules
		n := Name{Schema: rel.Schema, Name: rel.Name}
		r.byQual[n] = appendOnce(r.byQual[n], g)
		r.byName[rel.Name] = appendOnce(r.byName[rel.Name], g)
	}
	for _, v := range c.ViewBases {
		vi, ok1 := idx[v.View]
		bi, ok2 := idx[v.Base]
		if ok1 && ok2 && gOf[vi] != gOf[bi] {
			gr := &r.groups[gOf[vi]]
			gr.bases = appendOnce(gr.bases, gOf[bi])
		}
	}
	for _, fk := range c.ForeignKeys {
		ci, ok1 := idx[fk.Child]
		pi, ok2 := idx[fk.Parent]
		if !ok1 || !ok2 {
			continue
		}
		cg, pg := gOf[ci], gOf[pi]
		r.groups[cg].parent = appendOnce(r.groups[cg].parent, pg)
		p := &r.groups[pg]
		found := false
		for k := range p.child {
			if p.child[k].g == cg {
				p.child[k].deleteWrites = p.child[k].deleteWrites || fk.DeleteWrites
				p.child[k].updateWrites = p.child[k].updateWrites || fk.UpdateWrites
				found = true
			}
		}
		if !found {
			p.child = append(p.child, fkChild{g: cg, deleteWrites: fk.DeleteWrites, updateWrites: fk.UpdateWrites})
		}
	}
	r.indexes(c, idx, gOf, hasParent)
	for _, f := range c.Functions {
		k := functionKind(f)
		n := Name{Schema: f.Schema, Name: f.Name}
		r.funcs[n] = max(r.funcs[n], k)
		r.fnNames[f.Name] = max(r.fnNames[f.Name], k)
	}
	for _, b := range c.Builtins {
		r.builtin[b] = true
	}
	return r
}

// indexes fills the groups' keys from the catalog's unique indexes.
func (r *Resolver) indexes(c *Catalog, idx map[uint32]int, gOf []int, hasParent []bool) {
	for _, ix := range c.Indexes {
		i, ok := idx[ix.Rel]
		if !ok {
			continue
		}
		gr := &r.groups[gOf[i]]
		gr.uniques++
		gr.uniqueOther = gr.uniqueOther || ix.Other
		for _, col := range ix.Columns {
			if col.Name != "" && !slices.Contains(gr.uniqueCols, col.Name) {
				gr.uniqueCols = append(gr.uniqueCols, col.Name)
			}
		}
		// The key of a single table, or of a partitioned table (whose
		// primary key holds across its partitions); an inheritance
		// tree's keys hold in each table alone.
		if !ix.Primary || ix.Other || hasParent[i] || (gr.members > 1 && c.Relations[i].Kind != 'p') {
			continue
		}
		var pk []keyCol
		for _, col := range ix.Columns {
			k := keyKindOf(col)
			if k == 0 || col.Name == "" {
				pk = nil
				break
			}
			pk = append(pk, keyCol{name: col.Name, kind: k})
		}
		gr.pk = pk
	}
	for _, ix := range c.Indexes {
		i, ok := idx[ix.Rel]
		if !ok {
			continue
		}
		gr := &r.groups[gOf[i]]
		same := len(ix.Columns) == len(gr.pk) && !ix.Other
		for _, col := range ix.Columns {
			same = same && slices.ContainsFunc(gr.pk, func(k keyCol) bool { return k.name == col.Name })
		}
		gr.otherKeys = gr.otherKeys || !same
	}
	r.sequences(c, idx, gOf)
	r.keyed, r.freshKeys = map[string]bool{}, map[string]bool{}
	for _, gr := range r.groups {
		if gr.pk != nil {
			r.keyed[gr.key] = true
		}
		if gr.freshInserts() && !gr.view && !gr.opaque {
			r.freshKeys[gr.key] = true
		}
	}
}

// sequences marks the groups whose key is one integer column that a
// sequence fills (see RowKey.Seq).
func (r *Resolver) sequences(c *Catalog, idx map[uint32]int, gOf []int) {
	for _, sq := range c.Sequences {
		i, ok := idx[sq.Rel]
		if !ok {
			continue
		}
		gr := &r.groups[gOf[i]]
		if len(gr.pk) == 1 && gr.pk[0].kind == keyInt && gr.pk[0].name == sq.Column && !gr.seq {
			gr.seq, gr.seqLast = true, sq.Last
		}
	}
}

// FreshInserts reports whether, in Load mode, the relation key may take
// fresh inserts (see Resolver.fresh): a statement that reaches it whole,
// or by a key such an insert may have made, waits for their commits.
func (r *Resolver) FreshInserts(key string) bool {
	if r == nil || !r.fresh {
		return false
	}
	return r.freshKeys[key]
}

// Keyed reports whether statements may reach rows of the relation key by
// their primary key (see RowKey): a statement that reaches it whole must
// then also wait for the commits that wrote some of its rows by key.
func (r *Resolver) Keyed(key string) bool {
	return r != nil && r.keyed[key]
}

func cmpName(a, b Name) int {
	return cmp.Or(cmp.Compare(a.Schema, b.Schema), cmp.Compare(a.Name, b.Name))
}

func appendOnce(s []int, v int) []int {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// functionKind: a function in C that an extension installed reads no
// table in practice (uuid_generate_v4, PostGIS); an immutable one may not
// read tables, a stable one may not write them (PostgreSQL refuses
// writes in non-volatile functions).
func functionKind(f Function) fnKind {
	if f.Extension && (f.Language == "c" || f.Language == "internal") {
		return fnPure
	}
	switch f.Volatility {
	case 'i':
		return fnPure
	case 's':
		return fnReads
	}
	return fnOpaque
}

// fn decides a function call. An unqualified name that is both a builtin
// and a user function counts as the user's: more waiting, never less.
func (r *Resolver) fn(n Name) fnKind {
	switch {
	case n.Name == "":
		return fnOpaque
	case n.Schema == "pg_catalog" || n.Schema == "information_schema":
		return fnPure
	case n.Schema != "":
		if k, ok := r.funcs[n]; ok {
			return k
		}
		return fnOpaque
	}
	if k, ok := r.fnNames[n.Name]; ok {
		return k
	}
	if r.builtin[n.Name] {
		return fnPure
	}
	return fnOpaque
}

// lookup returns the groups a relation name may be. An unqualified name
// is every schema's relation of that name: the search_path of the
// original session is not in the log.
func (r *Resolver) lookup(n Name) []int {
	if n.Schema != "" {
		return r.byQual[n]
	}
	return r.byName[n.Name]
}

// Effect expands st.
func (r *Resolver) Effect(st *Statement) Effect {
	var e Effect
	if st.Tx != TxNone {
		return e
	}
	if st.Opaque {
		return Effect{ReadAll: true, WriteAll: true, Barrier: true}
	}
	e.ReadAll = st.ReadAll
	if r == nil {
		if len(st.Touch) > 0 || len(st.Funcs) > 0 || st.ReadAll {
			e = Effect{ReadAll: true, WriteAll: len(st.Write) > 0 || len(st.Funcs) > 0,
				LockAll: len(st.Write) > 0 || st.LockRows}
		}
		return e
	}
	if st.Rows != nil {
		if re, ok := r.rowEffect(st); ok {
			return re
		}
	}
	x := expansion{r: r, e: &e, touched: map[int]bool{}, written: map[int]Op{}}
	x.named(st, Name{})
	r.funcEffects(st, &e)
	e.assemble(&x, st.LockRows)
	e.Range = r.keyRange(st, &e)
	return e
}

// keyRange is the KeyRange of a plain SELECT (not FOR UPDATE, of known
// effect) that reads one relation, by a range of its primary key of one
// integer column; nil otherwise.
func (r *Resolver) keyRange(st *Statement, e *Effect) *KeyRange {
	ra := st.Rows
	if ra == nil || ra.Op != 0 || len(ra.Ranges) == 0 || st.LockRows || e.ReadAll || e.WriteAll || len(e.Write) > 0 || len(e.Touch) != 1 {
		return nil
	}
	gs := r.lookup(ra.Rel)
	if len(gs) != 1 {
		return nil
	}
	gr := &r.groups[gs[0]]
	if gr.view || len(gr.pk) != 1 || gr.pk[0].kind != keyInt || e.Touch[0] != gr.key {
		return nil
	}
	for _, c := range ra.Ranges {
		if c.Column == gr.pk[0].name {
			return &KeyRange{Rel: gr.key, Lo: c.Lo, Hi: c.Hi}
		}
	}
	return nil
}

// funcEffects adds what the functions st calls may read and write.
func (r *Resolver) funcEffects(st *Statement, e *Effect) {
	for _, f := range st.Funcs {
		k := r.fn(f)
		if k == fnPure && (f.Schema == "" || f.Schema == "pg_catalog") {
			// The large-object functions read and write the large
			// objects' catalog, which no statement names: one
			// relation of its own here.
			switch largeObjectFuncs[f.Name] {
			case loReads:
				e.Touch = append(e.Touch, largeObjects)
			case loWrites:
				e.Touch = append(e.Touch, largeObjects)
				e.Write = append(e.Write, largeObjects)
			}
		}
		switch k {
		case fnReads:
			e.ReadAll = true
		case fnOpaque:
			e.ReadAll, e.WriteAll = true, true
		}
	}
}

// largeObjects is the relation key of pg_largeobject, which the
// large-object functions read and write.
const largeObjects = "pg_catalog.pg_largeobject"

type loAccess uint8

const (
	loReads loAccess = iota + 1
	loWrites
)

// largeObjectFuncs are the builtins that read or write large objects (the
// server's side of libpq's lo_* calls, as SQL).
var largeObjectFuncs = map[string]loAccess{
	"lo_open": loReads, "loread": loReads, "lo_get": loReads, "lo_export": loReads,
	"lo_lseek": loReads, "lo_lseek64": loReads, "lo_tell": loReads, "lo_tell64": loReads, "lo_close": loReads,
	"lo_create": loWrites, "lo_creat": loWrites, "lo_from_bytea": loWrites, "lo_import": loWrites,
	"lo_put": loWrites, "lowrite": loWrites, "lo_unlink": loWrites, "lo_truncate": loWrites, "lo_truncate64": loWrites,
}

// assemble fills Touch, Write and Lock from an expansion: every relation
// written is touched; the relations whose rows it may wait to lock are
// those it writes, or all it touches when it locks the rows it reads.
func (e *Effect) assemble(x *expansion, lockRows bool) {
	for g := range x.touched {
		e.Touch = append(e.Touch, x.r.groups[g].key)
	}
	for g := range x.written {
		e.Write = append(e.Write, x.r.groups[g].key)
	}
	e.Touch = sortedUnique(append(e.Touch, e.Write...))
	e.Write = sortedUnique(e.Write)
	e.Lock = e.Write
	if lockRows {
		e.Lock = e.Touch
	}
}

// rowEffect is the Effect of a statement that reaches one row of its
// relation by key, or a blind insert (into a relation without unique
// indexes: it reads no row and conflicts with none, so it waits for
// nothing there, while its commit still counts as writing the whole
// relation); false when st is neither, or when something else of it
// reaches that relation whole (a view over it, a foreign key to itself).
func (r *Resolver) rowEffect(st *Statement) (Effect, bool) {
	ra := st.Rows
	gs := r.lookup(ra.Rel)
	if len(gs) != 1 {
		return Effect{}, false
	}
	g := gs[0]
	gr := &r.groups[g]
	if gr.view || gr.opaque {
		return Effect{}, false
	}
	blind := ra.Op == fingerprint.OpInsert && gr.uniques == 0
	fresh := r.fresh && ra.Op == fingerprint.OpInsert && !ra.Upsert && gr.freshInserts() && len(ra.Cols) > 0 &&
		!slices.ContainsFunc(ra.Cols, func(c string) bool { return slices.Contains(gr.uniqueCols, c) })
	var key *RowKey
	if !blind && !fresh {
		switch ra.Op {
		case fingerprint.OpUpdate:
			if gr.uniqueOther || slices.ContainsFunc(ra.Set, func(c string) bool { return slices.Contains(gr.uniqueCols, c) }) {
				return Effect{}, false
			}
		case fingerprint.OpInsert:
			if gr.otherKeys || slices.ContainsFunc(ra.Set, func(c string) bool { return slices.Contains(gr.uniqueCols, c) }) {
				return Effect{}, false
			}
		}
		if key = rowKey(gr, ra); key == nil {
			return Effect{}, false
		}
		key.Write = ra.Op != 0
		key.Lock = ra.Op != 0 || st.LockRows
		key.Shared = ra.Op == 0 && st.LockShares
		key.Insert = ra.Op == fingerprint.OpInsert
		key.Fresh = r.fresh && gr.freshInserts()
		key.Seq, key.SeqLast = gr.seq, gr.seqLast
	}
	var e Effect
	e.ReadAll = st.ReadAll
	x := expansion{r: r, e: &e, touched: map[int]bool{}, written: map[int]Op{}}
	x.named(st, ra.Rel)
	x.follow(g, ra.Op)
	if x.touched[g] || x.written[g] != 0 {
		return Effect{}, false
	}
	r.funcEffects(st, &e)
	e.assemble(&x, st.LockRows)
	switch {
	case fresh:
		e.Write = sortedUnique(append(e.Write, gr.key))
		e.Whole = []string{gr.key}
	case blind:
		e.Write = sortedUnique(append(e.Write, gr.key))
	default:
		key.Rel = gr.key
		e.Rows = key
	}
	return e, true
}

// rowKey returns the key of gr that ra's equalities give in full, nil
// when they do not.
func rowKey(gr *group, ra *fingerprint.RowAccess) *RowKey {
	if gr.pk == nil {
		return nil
	}
	k := &RowKey{}
	for _, c := range gr.pk {
		p := ra.Param(c.name)
		if p == 0 {
			return nil
		}
		k.Params = append(k.Params, p)
		k.kinds = append(k.kinds, c.kind)
	}
	return k
}

// expansion follows views and foreign keys from the relations a statement
// names.
type expansion struct {
	r       *Resolver
	e       *Effect
	touched map[int]bool
	written map[int]Op
}

// unknownPrefix marks, in an Effect, a name the catalog does not have.
const unknownPrefix = "?"

// named expands the relations st names, but skip: names the catalog
// does not have are kept as "?name" (unknownPrefix), the same in every
// schema.
func (x *expansion) named(st *Statement, skip Name) {
	for _, n := range st.Touch {
		if n == skip {
			continue
		}
		gs := x.r.lookup(n)
		if len(gs) == 0 {
			x.e.Touch = append(x.e.Touch, unknownPrefix+n.Name)
		}
		for _, g := range gs {
			x.touch(g)
		}
	}
	for _, w := range st.Write {
		if w.Name == skip {
			continue
		}
		gs := x.r.lookup(w.Name)
		if len(gs) == 0 {
			x.e.Write = append(x.e.Write, unknownPrefix+w.Name.Name)
		}
		for _, g := range gs {
			x.write(g, w.Op)
		}
	}
}

// touch reads a group, and what a view reads.
func (x *expansion) touch(g int) {
	if x.touched[g] {
		return
	}
	x.touched[g] = true
	for _, b := range x.r.groups[g].bases {
		x.touch(b)
	}
}

// write writes a group with op: a view writes its base relations (unless
// rules or INSTEAD OF triggers decide, which makes it opaque); a child
// row written reads its parents; a parent row updated or deleted reads
// its children, and writes them when the foreign key cascades or sets
// values.
func (x *expansion) write(g int, op Op) {
	if old, ok := x.written[g]; ok && old|op == old {
		return
	}
	x.written[g] |= op
	x.touch(g)
	x.follow(g, op)
}

// follow adds what writing g with op reaches beyond g itself.
func (x *expansion) follow(g int, op Op) {
	gr := &x.r.groups[g]
	if gr.opaque {
		x.e.ReadAll, x.e.WriteAll = true, true
	}
	if gr.view {
		for _, b := range gr.bases {
			x.write(b, op)
		}
	}
	if op&(OpInsert|OpUpdate) != 0 {
		for _, p := range gr.parent {
			x.touch(p)
		}
	}
	if op&(OpUpdate|OpDelete) != 0 {
		for _, c := range gr.child {
			x.touch(c.g)
			if (op&OpDelete != 0 && c.deleteWrites) || (op&OpUpdate != 0 && c.updateWrites) {
				x.write(c.g, OpUpdate|OpDelete)
			}
		}
	}
}

func sortedUnique(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
