package plan

import (
	"slices"
	"strings"
)

// ChangeKind says how a node differs between two plans of a statement.
type ChangeKind string

// Kinds of changes.
const (
	// Replaced: a node of the control plan became another node on the
	// candidate at the same place (Index Scan -> Seq Scan, Hash Join
	// -> Nested Loop, HashAggregate -> GroupAggregate).
	Replaced ChangeKind = "replaced"
	// Added: a node only the candidate's plan has (a Sort under a
	// GroupAggregate); its subtree is new with it.
	Added ChangeKind = "added"
	// Removed: a node only the control's plan has.
	Removed ChangeKind = "removed"
	// JoinOrder: a join at the same place joins other relations: the
	// join order changed.
	JoinOrder ChangeKind = "join_order"
)

// Change is one difference between two plans. Control and Candidate are
// the nodes' indexes in their plan's Nodes (-1 for the side without).
type Change struct {
	Kind      ChangeKind `json:"kind"`
	Control   int        `json:"control"`
	Candidate int        `json:"candidate"`
}

// Pair is a node of the control's plan aligned with one of the
// candidate's, by their indexes in Nodes.
type Pair struct {
	Control   int  `json:"control"`
	Candidate int  `json:"candidate"`
	Changed   bool `json:"changed,omitempty"`
}

// Diff is how two plans of one statement differ.
type Diff struct {
	// Same: the shapes are equal ("same plan").
	Same          bool   `json:"same"`
	ControlHash   string `json:"control_hash"`
	CandidateHash string `json:"candidate_hash"`
	// Changes in the order of the control's plan, parents first:
	// Changes[0] is the first difference.
	Changes []Change `json:"changes,omitempty"`
	// Pairs are the aligned nodes.
	Pairs []Pair `json:"pairs"`
}

// Compare aligns the candidate's plan of a statement with the control's.
// Same plans pair node for node. Different ones are aligned top down:
// children are matched by how alike their subtrees are (the same shape,
// the same label, the same relations below), a join's two children in
// either order, others in order; a node one side has above an otherwise
// alike subtree is Added or Removed rather than the whole subtree
// Replaced.
func Compare(control, candidate *Plan) *Diff {
	d := &Diff{ControlHash: control.Hash(), CandidateHash: candidate.Hash()}
	d.Same = d.ControlHash == d.CandidateHash && control.Shape() == candidate.Shape()
	al := newAligner(control, candidate)
	al.align(control.Root, candidate.Root)
	d.Changes, d.Pairs = al.changes, al.pairs
	if d.Pairs == nil {
		d.Pairs = []Pair{}
	}
	return d
}

// First returns the first change and the two nodes it names (nil for a
// side without), or ok false for the same plan.
func (d *Diff) First(control, candidate *Plan) (c Change, a, b *Node, ok bool) {
	if len(d.Changes) == 0 {
		return Change{}, nil, nil, false
	}
	c = d.Changes[0]
	return c, nodeAt(control, c.Control), nodeAt(candidate, c.Candidate), true
}

// ChangedNodes returns the indexes, in each plan's Nodes, of the nodes a
// change touches: replaced, added or removed nodes and their new or lost
// subtrees.
func (d *Diff) ChangedNodes(control, candidate *Plan) (ctl, cand map[int]bool) {
	ctl, cand = map[int]bool{}, map[int]bool{}
	paired := map[int]bool{}
	pairedB := map[int]bool{}
	for _, p := range d.Pairs {
		paired[p.Control], pairedB[p.Candidate] = true, true
		if p.Changed {
			ctl[p.Control], cand[p.Candidate] = true, true
		}
	}
	for i := range control.Nodes() {
		if !paired[i] {
			ctl[i] = true
		}
	}
	for i := range candidate.Nodes() {
		if !pairedB[i] {
			cand[i] = true
		}
	}
	return ctl, cand
}

func nodeAt(p *Plan, i int) *Node {
	if i < 0 {
		return nil
	}
	nodes := p.Nodes()
	if i >= len(nodes) {
		return nil
	}
	return nodes[i]
}

type aligner struct {
	ia, ib  map[*Node]int
	shape   map[*Node]string
	rels    map[*Node][]string
	pairs   []Pair
	changes []Change
}

func newAligner(a, b *Plan) *aligner {
	al := &aligner{ia: map[*Node]int{}, ib: map[*Node]int{}, shape: map[*Node]string{}, rels: map[*Node][]string{}}
	for i, n := range a.Nodes() {
		al.ia[n] = i
	}
	for i, n := range b.Nodes() {
		al.ib[n] = i
	}
	for _, p := range []*Plan{a, b} {
		if p.Root != nil {
			al.index(p.Root)
		}
	}
	return al
}

// index records every node's subtree shape and the relations (aliases)
// scanned below it.
func (al *aligner) index(n *Node) (string, []string) {
	var b strings.Builder
	b.WriteString(n.ShapeLabel())
	var rels []string
	if n.Scan() {
		if r := cmpOr(n.Alias, cmpOr(n.Relation, cmpOr(n.CTE, n.Function))); r != "" {
			rels = append(rels, r)
		}
	}
	if len(n.Children) > 0 {
		b.WriteString(" (")
		for i, c := range n.Children {
			if i > 0 {
				b.WriteString(", ")
			}
			s, r := al.index(c)
			b.WriteString(s)
			rels = append(rels, r...)
		}
		b.WriteString(")")
	}
	slices.Sort(rels)
	rels = slices.Compact(rels)
	al.shape[n], al.rels[n] = b.String(), rels
	return al.shape[n], rels
}

// category groups node types whose replacement by one another is a
// change of method rather than of structure.
func category(n *Node) string {
	switch {
	case n.Join():
		return "join"
	case n.Scan():
		return "scan"
	case n.Type == "Aggregate" || n.Type == "Group" || n.Type == "WindowAgg" || n.Type == "SetOp" || n.Type == "Unique":
		return "aggregate"
	case n.Type == "Sort" || n.Type == "Incremental Sort":
		return "sort"
	}
	return n.Type
}

// similarity scores how alike two subtrees are: 4 for the same shape,
// else points for the same label, the same (or overlapping) relations
// below, and the same category.
func (al *aligner) similarity(x, y *Node) float64 {
	if al.shape[x] == al.shape[y] {
		return 4
	}
	s := 0.0
	if x.ShapeLabel() == y.ShapeLabel() {
		s++
	}
	rx, ry := al.rels[x], al.rels[y]
	switch {
	case len(rx) > 0 && slices.Equal(rx, ry):
		s += 1.5
	case overlap(rx, ry):
		s += 0.5
	}
	if category(x) == category(y) {
		s += 0.25
	}
	return s
}

func overlap(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

func (al *aligner) align(a, b *Node) {
	if al.shape[a] != al.shape[b] && a.ShapeLabel() != b.ShapeLabel() {
		here := al.similarity(a, b)
		if len(b.Children) == 1 && al.similarity(a, b.Children[0]) > here {
			al.changes = append(al.changes, Change{Kind: Added, Control: -1, Candidate: al.ib[b]})
			al.align(a, b.Children[0])
			return
		}
		if len(a.Children) == 1 && al.similarity(a.Children[0], b) > here {
			al.changes = append(al.changes, Change{Kind: Removed, Control: al.ia[a], Candidate: -1})
			al.align(a.Children[0], b)
			return
		}
	}
	p := Pair{Control: al.ia[a], Candidate: al.ib[b]}
	switch {
	case a.ShapeLabel() != b.ShapeLabel():
		p.Changed = true
		al.changes = append(al.changes, Change{Kind: Replaced, Control: p.Control, Candidate: p.Candidate})
	case a.Join() && (!slices.Equal(al.rels[a], al.rels[b]) ||
		len(a.Children) == 2 && len(b.Children) == 2 && !slices.Equal(al.rels[a.Children[0]], al.rels[b.Children[0]])):
		// The same join at the same place, over other inputs or with
		// its inputs swapped (the other side hashed, or looped over).
		p.Changed = true
		al.changes = append(al.changes, Change{Kind: JoinOrder, Control: p.Control, Candidate: p.Candidate})
	}
	al.pairs = append(al.pairs, p)
	matched := al.matchChildren(a.Children, b.Children)
	usedB := make([]bool, len(b.Children))
	// Children in the control's order; a candidate child left over is
	// reported after the control child it follows.
	for i, ca := range a.Children {
		j := matched[i]
		if j < 0 {
			al.changes = append(al.changes, Change{Kind: Removed, Control: al.ia[ca], Candidate: -1})
			continue
		}
		usedB[j] = true
		al.align(ca, b.Children[j])
	}
	for j, cb := range b.Children {
		if !usedB[j] {
			al.changes = append(al.changes, Change{Kind: Added, Control: -1, Candidate: al.ib[cb]})
		}
	}
}

// matchChildren returns, for each of a, the index of its match in b or -1.
func (al *aligner) matchChildren(a, b []*Node) []int {
	out := make([]int, len(a))
	for i := range out {
		out[i] = -1
	}
	if len(a) == 0 || len(b) == 0 {
		return out
	}
	if len(a) == 2 && len(b) == 2 {
		straight := [2]float64{al.similarity(a[0], b[0]), al.similarity(a[1], b[1])}
		crossed := [2]float64{al.similarity(a[0], b[1]), al.similarity(a[1], b[0])}
		pick, perm := straight, [2]int{0, 1}
		if crossed[0]+crossed[1] > straight[0]+straight[1] {
			pick, perm = crossed, [2]int{1, 0}
		}
		for i := range 2 {
			if pick[i] > 0 {
				out[i] = perm[i]
			}
		}
		return out
	}
	if len(a) == 1 && len(b) == 1 {
		if al.similarity(a[0], b[0]) > 0 {
			out[0] = 0
		}
		return out
	}
	// Order-preserving best matching (a weighted longest common
	// subsequence).
	n, m := len(a), len(b)
	score := make([][]float64, n+1)
	for i := range score {
		score[i] = make([]float64, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			best := max(score[i+1][j], score[i][j+1])
			if s := al.similarity(a[i], b[j]); s > 0 {
				best = max(best, s+score[i+1][j+1])
			}
			score[i][j] = best
		}
	}
	for i, j := 0, 0; i < n && j < m; {
		s := al.similarity(a[i], b[j])
		switch {
		case s > 0 && score[i][j] == s+score[i+1][j+1]:
			out[i] = j
			i++
			j++
		case score[i][j] == score[i+1][j]:
			i++
		default:
			j++
		}
	}
	return out
}
