package plan

import (
	"fmt"
	"hash/fnv"
	"strings"
)

// ShapeLabel is what identifies n in a plan's shape: its label (node
// name, strategy, join type, direction, index, relation and alias) with
// the schema left out, which only VERBOSE prints, and the kind of subplan
// it starts. Estimates, measurements and expressions are not part of it.
func (n *Node) ShapeLabel() string {
	c := *n
	c.Schema = ""
	s := c.Label()
	if n.Subplan != "" {
		s = subplanKind(n.Subplan) + ": " + s
	}
	return s
}

// subplanKind keeps "SubPlan 1", "InitPlan 2", "CTE name" of a subplan's
// name, without what a version adds ("(returns $0)").
func subplanKind(name string) string {
	if strings.HasPrefix(name, "CTE ") {
		return name
	}
	w := strings.Fields(name)
	if len(w) > 2 {
		w = w[:2]
	}
	return strings.Join(w, " ")
}

// Shape is the plan's shape as one line: every node's ShapeLabel, its
// children in parentheses, in EXPLAIN's order. Two plans with the same
// shape are the same plan, whatever their estimates and figures.
func (p *Plan) Shape() string {
	if p == nil || p.Root == nil {
		return ""
	}
	var b strings.Builder
	writeShape(&b, p.Root)
	return b.String()
}

func writeShape(b *strings.Builder, n *Node) {
	b.WriteString(n.ShapeLabel())
	if len(n.Children) == 0 {
		return
	}
	b.WriteString(" (")
	for i, c := range n.Children {
		if i > 0 {
			b.WriteString(", ")
		}
		writeShape(b, c)
	}
	b.WriteString(")")
}

// Hash is a stable identity of the plan's shape: 16 hexadecimal digits of
// the FNV-1a hash of Shape. It is the same for the JSON and the text form
// of a plan, for an analyzed plan and its estimate, and across runs.
func (p *Plan) Hash() string {
	h := fnv.New64a()
	h.Write([]byte(p.Shape()))
	return fmt.Sprintf("%016x", h.Sum64())
}
