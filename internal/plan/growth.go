package plan

import (
	"cmp"
	"slices"
)

// Work is what one node did by itself, its children's share taken out,
// over all its loops: what EXPLAIN ANALYZE's inclusive per-loop figures
// come to for the node alone.
type Work struct {
	// SelfMS is the node's own time: its total time (per-loop time
	// times loops) less its children's. Parallel children run at once,
	// so their sum may exceed the parent's; the result is never
	// negative.
	SelfMS float64 `json:"self_ms"`
	// TotalMS is the node's inclusive time over all loops.
	TotalMS float64 `json:"total_ms"`
	Loops   float64 `json:"loops"`
	// Rows is the rows it returned over all loops.
	Rows float64 `json:"rows"`
	// Buffers the node used itself (its children's taken out).
	SharedHit   int64 `json:"shared_hit"`
	SharedRead  int64 `json:"shared_read"`
	TempRead    int64 `json:"temp_read"`
	TempWritten int64 `json:"temp_written"`
	// Spilled: a sort, hash or hashed aggregate went to disk.
	Spilled bool `json:"spilled,omitempty"`
}

// WorkOf returns what n did by itself; ok is false when n was not
// analyzed.
func WorkOf(n *Node) (w Work, ok bool) {
	if n == nil || n.Actual == nil {
		return Work{}, false
	}
	w.Loops = n.Actual.Loops
	w.TotalMS = n.Actual.TotalMS * n.Actual.Loops
	w.Rows = n.Actual.Rows * n.Actual.Loops
	w.SelfMS = w.TotalMS
	if b := n.Buffers; b != nil {
		w.SharedHit, w.SharedRead, w.TempRead, w.TempWritten = b.SharedHit, b.SharedRead, b.TempRead, b.TempWritten
	}
	for _, c := range n.Children {
		if c.Actual != nil {
			w.SelfMS -= c.Actual.TotalMS * c.Actual.Loops
		}
		if b := c.Buffers; b != nil {
			w.SharedHit -= b.SharedHit
			w.SharedRead -= b.SharedRead
			w.TempRead -= b.TempRead
			w.TempWritten -= b.TempWritten
		}
	}
	w.SelfMS = max(w.SelfMS, 0)
	w.SharedHit, w.SharedRead = max(w.SharedHit, 0), max(w.SharedRead, 0)
	w.TempRead, w.TempWritten = max(w.TempRead, 0), max(w.TempWritten, 0)
	w.Spilled = n.Spilled()
	return w, true
}

// Growth is one aligned node's work on both sides.
type Growth struct {
	Control   int  `json:"control"`
	Candidate int  `json:"candidate"`
	Before    Work `json:"before"`
	After     Work `json:"after"`
}

// TimeAdded is the node's own time the candidate added.
func (g Growth) TimeAdded() float64 { return g.After.SelfMS - g.Before.SelfMS }

// ReadsAdded is the shared blocks the candidate read from outside
// shared_buffers beyond the control's.
func (g Growth) ReadsAdded() int64 { return g.After.SharedRead - g.Before.SharedRead }

// TempAdded is the temporary blocks (read and written) the candidate
// added: work that went to disk for lack of work_mem.
func (g Growth) TempAdded() int64 {
	return g.After.TempRead + g.After.TempWritten - g.Before.TempRead - g.Before.TempWritten
}

// Grew reports whether the node did more on the candidate: more own time
// (by minMS at least), more reads from outside shared_buffers, more
// temporary blocks, or a spill the control did not have.
func (g Growth) Grew(minMS float64) bool {
	return g.TimeAdded() >= minMS || g.ReadsAdded() > 0 || g.TempAdded() > 0 || g.After.Spilled && !g.Before.Spilled
}

// Growths returns the aligned nodes analyzed on both sides, the ones
// whose own time grew most first (then by reads and temporary blocks
// added). d aligns the two plans.
func Growths(control, candidate *Plan, d *Diff) []Growth {
	a, b := control.Nodes(), candidate.Nodes()
	var out []Growth
	for _, p := range d.Pairs {
		if p.Control < 0 || p.Candidate < 0 || p.Control >= len(a) || p.Candidate >= len(b) {
			continue
		}
		wa, okA := WorkOf(a[p.Control])
		wb, okB := WorkOf(b[p.Candidate])
		if !okA || !okB {
			continue
		}
		out = append(out, Growth{Control: p.Control, Candidate: p.Candidate, Before: wa, After: wb})
	}
	slices.SortStableFunc(out, func(x, y Growth) int {
		if c := cmp.Compare(y.TimeAdded(), x.TimeAdded()); c != 0 {
			return c
		}
		if c := cmp.Compare(y.ReadsAdded(), x.ReadsAdded()); c != 0 {
			return c
		}
		return cmp.Compare(y.TempAdded(), x.TempAdded())
	})
	return out
}
