package syncdep

import (
	"cmp"
	"slices"
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
}

// group is a relation, with its partitions or inheritance children.
type group struct {
	key    string
	view   bool
	opaque bool  // writing it fires triggers or rules
	bases  []int // a view's relations
	parent []int // groups it references by foreign key
	child  []fkChild
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
	x := expansion{r: r, e: &e, touched: map[int]bool{}, written: map[int]Op{}}
	for _, n := range st.Touch {
		gs := r.lookup(n)
		if len(gs) == 0 {
			e.Touch = append(e.Touch, "?"+n.Name)
		}
		for _, g := range gs {
			x.touch(g)
		}
	}
	for _, w := range st.Write {
		gs := r.lookup(w.Name)
		if len(gs) == 0 {
			e.Write = append(e.Write, "?"+w.Name.Name)
		}
		for _, g := range gs {
			x.write(g, w.Op)
		}
	}
	for _, f := range st.Funcs {
		switch r.fn(f) {
		case fnReads:
			e.ReadAll = true
		case fnOpaque:
			e.ReadAll, e.WriteAll = true, true
		}
	}
	for g := range x.touched {
		e.Touch = append(e.Touch, r.groups[g].key)
	}
	for g := range x.written {
		e.Write = append(e.Write, r.groups[g].key)
	}
	e.Touch = sortedUnique(append(e.Touch, e.Write...))
	e.Write = sortedUnique(e.Write)
	e.Lock = e.Write
	if st.LockRows {
		e.Lock = e.Touch
	}
	return e
}

// expansion follows views and foreign keys from the relations a statement
// names.
type expansion struct {
	r       *Resolver
	e       *Effect
	touched map[int]bool
	written map[int]Op
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
