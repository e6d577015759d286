package plan

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ParseText reads a plan in EXPLAIN's text format, as EXPLAIN and
// auto_explain (log_format = text) write it: one line per node, children
// under "->  " arrows, each node's properties indented below it, then the
// statement's summary (Planning, Planning Time, JIT, Execution Time). The
// plan may be indented as a whole (psql's leading space).
func ParseText(text string) (*Plan, error) {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	r := &textReader{p: &Plan{PlanningMS: -1, ExecutionMS: -1}, block: -1}
	for i, line := range lines {
		if err := r.line(line); err != nil {
			return nil, fmt.Errorf("plan text, line %d: %w", i+1, err)
		}
	}
	if r.p.Root == nil {
		return nil, fmt.Errorf("plan text: %w: no node", ErrNotPlan)
	}
	r.p.Root.Walk(func(n *Node) bool {
		if n.Actual != nil {
			r.p.Analyzed = true
			if n.Actual.TotalMS > 0 || n.Actual.StartupMS > 0 {
				r.p.Timing = true
			}
		}
		if r.p.Buffers && n.Buffers == nil {
			n.Buffers = &Buffers{}
		}
		return true
	})
	return r.p, nil
}

type textReader struct {
	p     *Plan
	base  int // indentation of the root line
	stack []*textNode
	// subplan is the name line ("SubPlan 1") the next node starts.
	subplan string
	// block is the indentation of a property that opened a block of
	// deeper lines ("Worker 0:", "JIT:", "Planning:"), -1 when none;
	// blockKind says which.
	block     int
	blockKind string
}

type textNode struct {
	n       *Node
	propCol int // where its properties and its children's arrows begin
	depth   int
}

// header matches a node line's figures: the label, then the estimates
// and what ANALYZE measured, each optional.
var header = regexp.MustCompile(`^(.*?)(?:  \(cost=(\d+(?:\.\d+)?)\.\.(\d+(?:\.\d+)?) rows=(\d+(?:\.\d+)?) width=(\d+)\))?(?: ?\((?:actual (?:time=(\d+(?:\.\d+)?)\.\.(\d+(?:\.\d+)?) )?rows=(\d+(?:\.\d+)?) loops=(\d+(?:\.\d+)?)|(never executed))\))?$`)

var subplanLine = regexp.MustCompile(`^(?:SubPlan \d+|InitPlan \d+(?: \(returns .*\))?|CTE .+)$`)

func (r *textReader) line(raw string) error {
	trimmed := strings.TrimLeft(raw, " ")
	if strings.TrimSpace(trimmed) == "" {
		return nil
	}
	trimmed = strings.TrimRight(trimmed, " \t")
	indent := len(raw) - len(strings.TrimLeft(raw, " "))
	if r.p.Root == nil {
		n, err := parseHeader(trimmed)
		if err != nil {
			return err
		}
		r.base = indent
		r.p.Root = n
		r.push(n, 2, 0)
		return nil
	}
	indent -= r.base
	if indent < 0 {
		return fmt.Errorf("line indented less than the plan's first line: %.80q", raw)
	}
	if rest, ok := strings.CutPrefix(trimmed, "->  "); ok {
		r.block = -1
		n, err := parseHeader(rest)
		if err != nil {
			return err
		}
		n.Subplan, r.subplan = r.subplan, ""
		parent := r.parent(indent)
		if parent == nil {
			return fmt.Errorf("node %.80q is not under any node", rest)
		}
		if parent.depth+1 > maxDepth {
			return fmt.Errorf("nested deeper than %d nodes", maxDepth)
		}
		parent.n.Children = append(parent.n.Children, n)
		r.push(n, indent+6, parent.depth+1)
		return nil
	}
	if r.block >= 0 && indent > r.block {
		r.blockLine(trimmed)
		return nil
	}
	r.block = -1
	if indent < 2 {
		r.summary(trimmed, indent)
		return nil
	}
	if subplanLine.MatchString(trimmed) {
		r.parent(indent)
		r.subplan = trimmed
		return nil
	}
	owner := r.parent(indent)
	if owner == nil {
		return fmt.Errorf("property %.80q belongs to no node", trimmed)
	}
	r.property(owner.n, trimmed, indent)
	return nil
}

func (r *textReader) push(n *Node, propCol, depth int) {
	r.stack = append(r.stack, &textNode{n: n, propCol: propCol, depth: depth})
}

// parent pops the nodes whose properties begin right of col and returns
// the node a line at col belongs to.
func (r *textReader) parent(col int) *textNode {
	for len(r.stack) > 1 && r.stack[len(r.stack)-1].propCol > col {
		r.stack = r.stack[:len(r.stack)-1]
	}
	if len(r.stack) == 0 {
		return nil
	}
	return r.stack[len(r.stack)-1]
}

// summary reads a line about the statement as a whole.
func (r *textReader) summary(line string, indent int) {
	key, value, _ := strings.Cut(line, ":")
	value = strings.TrimSpace(value)
	switch key {
	case "Planning Time":
		r.p.PlanningMS = parseMS(value)
	case "Execution Time":
		r.p.ExecutionMS = parseMS(value)
	case "Settings":
		r.p.Settings = parseSettings(value)
	case "JIT":
		r.p.JIT = &JIT{}
		r.block, r.blockKind = indent, "jit"
	case "Planning":
		r.block, r.blockKind = indent, "planning"
	}
}

// blockLine reads a line of a block: the statement's JIT, or lines to
// leave out (a worker's figures, planning buffers).
func (r *textReader) blockLine(line string) {
	if r.blockKind != "jit" || r.p.JIT == nil {
		return
	}
	key, value, _ := strings.Cut(line, ":")
	switch key {
	case "Functions":
		n, _ := strconv.Atoi(strings.TrimSpace(value))
		r.p.JIT.Functions = n
	case "Timing":
		if i := strings.LastIndex(value, "Total "); i >= 0 {
			r.p.JIT.TotalMS = parseMS(value[i+len("Total "):])
		}
	}
}

// parseMS reads "0.512 ms".
func parseMS(s string) float64 {
	v, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "ms")), 64)
	return v
}

var settingRe = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_.]*) = '((?:[^']|'')*)'`)

func parseSettings(s string) map[string]string {
	out := map[string]string{}
	for _, m := range settingRe.FindAllStringSubmatch(s, -1) {
		out[m[1]] = strings.ReplaceAll(m[2], "''", "'")
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// property reads one property line of n.
func (r *textReader) property(n *Node, line string, indent int) {
	key, value, ok := strings.Cut(line, ": ")
	if !ok {
		if k, found := strings.CutSuffix(line, ":"); found {
			// A block ("JIT:" of a worker).
			r.block, r.blockKind = indent, k
			return
		}
		n.Props = append(n.Props, Prop{Key: line})
		return
	}
	switch {
	case strings.HasPrefix(key, "Worker ") && isDigits(strings.TrimPrefix(key, "Worker ")):
		// A parallel worker's own figures, and the lines under them.
		r.block, r.blockKind = indent, "worker"
		return
	}
	switch key {
	case "Filter":
		n.Filter = value
	case "Index Cond":
		n.IndexCond = value
	case "Recheck Cond":
		n.RecheckCond = value
	case "Join Filter":
		n.JoinFilter = value
	case "Hash Cond":
		n.HashCond = value
	case "Merge Cond":
		n.MergeCond = value
	case "Sort Key":
		n.SortKey = splitList(value)
	case "Group Key":
		n.GroupKey = splitList(value)
	case "Rows Removed by Filter", "Rows Removed by Join Filter", "Rows Removed by Index Recheck":
		v, _ := strconv.ParseFloat(value, 64)
		if n.Actual == nil {
			n.Actual = &Actual{}
		}
		switch key {
		case "Rows Removed by Filter":
			n.Actual.RemovedByFilter = v
		case "Rows Removed by Join Filter":
			n.Actual.RemovedByJoinFilter = v
		default:
			n.Actual.RemovedByIndexRecheck = v
		}
	case "Workers Planned":
		n.WorkersPlanned, _ = strconv.Atoi(value)
	case "Workers Launched":
		n.WorkersLaunched, _ = strconv.Atoi(value)
	case "Buffers":
		r.p.Buffers = true
		n.Buffers = parseBuffers(value, n.Buffers)
	case "I/O Timings":
		if n.Buffers == nil {
			n.Buffers = &Buffers{}
		}
		parseIOTimings(value, n.Buffers)
	case "Sort Method":
		n.Sort = parseSort(line)
	case "Buckets":
		n.Hash = parseHash(line)
	case "Batches", "Planned Partitions":
		if n.Type == "Aggregate" || n.Type == "SetOp" {
			n.HashAgg = parseHashAgg(line)
		} else {
			n.Props = append(n.Props, Prop{Key: key, Value: value})
		}
	default:
		n.Props = append(n.Props, Prop{Key: key, Value: value})
	}
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// fields splits a line of several "Key: value" figures separated by two
// spaces ("Sort Method: external merge  Disk: 4392kB").
func fields(line string) map[string]string {
	out := map[string]string{}
	for _, part := range strings.Split(line, "  ") {
		if k, v, ok := strings.Cut(strings.TrimSpace(part), ": "); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// kb reads "4392kB".
func kb(s string) int64 {
	v, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(s), "kB"), 10, 64)
	return v
}

// countOriginal reads "65536 (originally 1024)" as its two numbers; the
// original is the count itself when not given.
func countOriginal(s string) (n, orig int64) {
	now, was, ok := strings.Cut(s, " (originally ")
	n, _ = strconv.ParseInt(strings.TrimSpace(now), 10, 64)
	if !ok {
		return n, n
	}
	orig, _ = strconv.ParseInt(strings.TrimSuffix(was, ")"), 10, 64)
	return n, orig
}

func parseSort(line string) *Sort {
	f := fields(line)
	s := &Sort{Method: f["Sort Method"]}
	switch {
	case f["Disk"] != "":
		s.SpaceType, s.SpaceKB = "Disk", kb(f["Disk"])
	case f["Memory"] != "":
		s.SpaceType, s.SpaceKB = "Memory", kb(f["Memory"])
	}
	return s
}

func parseHash(line string) *Hash {
	f := fields(line)
	h := &Hash{PeakMemoryKB: kb(f["Memory Usage"])}
	h.Buckets, h.OriginalBuckets = countOriginal(f["Buckets"])
	h.Batches, h.OriginalBatches = countOriginal(f["Batches"])
	return h
}

func parseHashAgg(line string) *HashAgg {
	f := fields(line)
	h := &HashAgg{PeakMemoryKB: kb(f["Memory Usage"]), DiskKB: kb(f["Disk Usage"])}
	h.PlannedPartitions, _ = strconv.ParseInt(f["Planned Partitions"], 10, 64)
	h.Batches, _ = strconv.ParseInt(f["Batches"], 10, 64)
	return h
}

// parseBuffers reads "shared hit=3 read=2 dirtied=1 written=1, local
// hit=1, temp read=5 written=5".
func parseBuffers(s string, b *Buffers) *Buffers {
	if b == nil {
		b = &Buffers{}
	}
	for _, part := range strings.Split(s, ",") {
		words := strings.Fields(part)
		if len(words) < 2 {
			continue
		}
		kind := words[0]
		for _, w := range words[1:] {
			k, v, ok := strings.Cut(w, "=")
			if !ok {
				continue
			}
			n, _ := strconv.ParseInt(v, 10, 64)
			switch kind + " " + k {
			case "shared hit":
				b.SharedHit = n
			case "shared read":
				b.SharedRead = n
			case "shared dirtied":
				b.SharedDirtied = n
			case "shared written":
				b.SharedWritten = n
			case "local hit":
				b.LocalHit = n
			case "local read":
				b.LocalRead = n
			case "local dirtied":
				b.LocalDirtied = n
			case "local written":
				b.LocalWritten = n
			case "temp read":
				b.TempRead = n
			case "temp written":
				b.TempWritten = n
			}
		}
	}
	return b
}

// parseIOTimings reads "shared/local read=0.048 write=0.1, temp read=1.2"
// (and the older "read=0.048 write=0.1").
func parseIOTimings(s string, b *Buffers) {
	for _, w := range strings.Fields(strings.ReplaceAll(s, ",", " ")) {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			continue
		}
		f, _ := strconv.ParseFloat(v, 64)
		switch k {
		case "read":
			b.ReadMS += f
		case "write":
			b.WriteMS += f
		}
	}
}

// splitList splits a key list at its top-level commas: "(a + b), c" is
// two keys.
func splitList(s string) []string {
	var out []string
	depth, quote, start := 0, byte(0), 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(' || c == '[':
			depth++
		case c == ')' || c == ']':
			depth--
		case c == ',' && depth == 0 && i+1 < len(s) && s[i+1] == ' ':
			out = append(out, s[start:i])
			start = i + 2
			i++
		}
	}
	return append(out, s[start:])
}

// parseHeader reads a node's line: its label and figures.
func parseHeader(line string) (*Node, error) {
	m := header.FindStringSubmatch(line)
	if m == nil {
		return nil, fmt.Errorf("%w: %.80q is not a plan node", ErrNotPlan, line)
	}
	n, err := parseLabel(m[1])
	if err != nil {
		return nil, err
	}
	f := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	if m[2] != "" {
		n.StartupCost, n.TotalCost, n.PlanRows = f(m[2]), f(m[3]), f(m[4])
		n.PlanWidth, _ = strconv.Atoi(m[5])
	}
	switch {
	case m[10] != "":
		n.Actual = &Actual{NeverExecuted: true}
	case m[8] != "":
		n.Actual = &Actual{StartupMS: f(m[6]), TotalMS: f(m[7]), Rows: f(m[8]), Loops: f(m[9])}
	}
	return n, nil
}

var joinName = regexp.MustCompile(`^(Nested Loop|Hash|Merge)(?: (Left|Full|Right|Semi|Anti|Right Anti))? Join$`)

// nodeNames are the names of nodes that take no target, by their text
// name, with their JSON type; scans and the names parseLabel reads
// otherwise are not here.
var nodeNames = map[string]string{
	"Result": "Result", "ProjectSet": "ProjectSet", "Append": "Append", "Merge Append": "Merge Append",
	"Recursive Union": "Recursive Union", "BitmapAnd": "BitmapAnd", "BitmapOr": "BitmapOr",
	"Gather": "Gather", "Gather Merge": "Gather Merge", "Sort": "Sort", "Incremental Sort": "Incremental Sort",
	"Group": "Group", "WindowAgg": "WindowAgg", "Unique": "Unique", "Hash": "Hash", "LockRows": "LockRows",
	"Limit": "Limit", "Materialize": "Materialize", "Memoize": "Memoize", "Result Cache": "Memoize",
	"Nested Loop": "Nested Loop", "Foreign Scan": "Foreign Scan", "WorkTable Scan": "WorkTable Scan",
	"Named Tuplestore Scan": "Named Tuplestore Scan", "Seq Scan": "Seq Scan", "Bitmap Heap Scan": "Bitmap Heap Scan",
	"Tid Scan": "Tid Scan", "Tid Range Scan": "Tid Range Scan", "Sample Scan": "Sample Scan",
	"Subquery Scan": "Subquery Scan", "Function Scan": "Function Scan", "Table Function Scan": "Table Function Scan",
	"Values Scan": "Values Scan", "CTE Scan": "CTE Scan",
}

var aggNames = map[string]string{"Aggregate": "Plain", "GroupAggregate": "Sorted", "HashAggregate": "Hashed", "MixedAggregate": "Mixed"}

// parseLabel reads a node's label: "Parallel Index Only Scan Backward
// using i on s.t a", "Finalize HashAggregate", "Hash Left Join".
func parseLabel(label string) (*Node, error) {
	n := &Node{}
	rest := label
	if r, ok := strings.CutPrefix(rest, "Parallel "); ok {
		n.Parallel, rest = true, r
	}
	if r, ok := strings.CutPrefix(rest, "Async "); ok {
		n.Async, rest = true, r
	}
	name, target, hasTarget := cutUnquoted(rest, " on ")
	name, using, _ := cutUnquoted(name, " using ")
	if b, ok := strings.CutSuffix(name, " Backward"); ok {
		n.Backward, name = true, b
	}
	switch {
	case name == "Index Scan" || name == "Index Only Scan":
		n.Type = name
		if using == "" {
			return nil, fmt.Errorf("%w: %.80q: an index scan without an index", ErrNotPlan, label)
		}
		idx, err := identList(using, 1)
		if err != nil {
			return nil, err
		}
		n.Index = idx[0]
	case name == "Bitmap Index Scan":
		n.Type = name
		idx, err := identList(target, 1)
		if err != nil {
			return nil, err
		}
		n.Index, hasTarget = idx[len(idx)-1], false
	case strings.HasPrefix(name, "Custom Scan (") && strings.HasSuffix(name, ")"):
		n.Type, n.Provider = "Custom Scan", name[len("Custom Scan ("):len(name)-1]
	case name == "Insert" || name == "Update" || name == "Delete" || name == "Merge":
		n.Type, n.Operation = "ModifyTable", name
	case name == "Foreign Insert" || name == "Foreign Update" || name == "Foreign Delete":
		n.Type, n.Operation = "Foreign Scan", strings.TrimPrefix(name, "Foreign ")
	case name == "SetOp" || name == "HashSetOp":
		n.Type, n.Strategy = "SetOp", map[bool]string{true: "Hashed", false: "Sorted"}[name == "HashSetOp"]
	default:
		agg := name
		for _, pm := range []string{"Partial ", "Finalize "} {
			if r, ok := strings.CutPrefix(agg, pm); ok {
				n.PartialMode, agg = strings.TrimSpace(pm), r
			}
		}
		if s, ok := aggNames[agg]; ok {
			n.Type, n.Strategy = "Aggregate", s
			break
		}
		n.PartialMode = ""
		if m := joinName.FindStringSubmatch(name); m != nil {
			n.Type = map[string]string{"Nested Loop": "Nested Loop", "Hash": "Hash Join", "Merge": "Merge Join"}[m[1]]
			n.JoinType = cmpOr(m[2], "Inner")
			break
		}
		if name == "Nested Loop" {
			n.Type, n.JoinType = "Nested Loop", "Inner"
			break
		}
		t, ok := nodeNames[name]
		if !ok {
			return nil, fmt.Errorf("%w: unknown node %.80q", ErrNotPlan, name)
		}
		n.Type = t
	}
	if !hasTarget {
		return n, nil
	}
	return n, n.setTarget(target)
}

// setTarget reads what follows " on ": [schema.]name [alias].
func (n *Node) setTarget(target string) error {
	ids, err := identList(target, 3)
	if err != nil {
		return err
	}
	var schema, name, alias string
	switch {
	case len(ids) == 3: // schema . name alias
		schema, name, alias = ids[0], ids[1], ids[2]
	case len(ids) == 2 && strings.Contains(target, ".") && dotted(target):
		schema, name = ids[0], ids[1]
	case len(ids) == 2:
		name, alias = ids[0], ids[1]
	default:
		name = ids[0]
	}
	if alias == "" {
		alias = name
	}
	switch n.Type {
	case "CTE Scan", "WorkTable Scan":
		n.CTE, n.Alias = name, alias
	case "Function Scan":
		n.Function, n.Schema, n.Alias = name, schema, alias
	case "Subquery Scan", "Values Scan", "Table Function Scan", "Named Tuplestore Scan":
		n.Alias = alias
		if len(ids) == 1 {
			n.Alias = name
		}
	default:
		n.Relation, n.Schema, n.Alias = name, schema, alias
	}
	return nil
}

// cutUnquoted is strings.Cut at the first sep outside double quotes.
func cutUnquoted(s, sep string) (before, after string, found bool) {
	quoted := false
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			quoted = !quoted
			continue
		}
		if !quoted && strings.HasPrefix(s[i:], sep) {
			return s[:i], s[i+len(sep):], true
		}
	}
	return s, "", false
}

// dotted reports whether a two-identifier target is "schema.name"
// rather than "name alias": a dot outside quotes joins the first two.
func dotted(s string) bool {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			quoted = !quoted
		case '.':
			if !quoted {
				return true
			}
		case ' ':
			if !quoted {
				return false
			}
		}
	}
	return false
}

// identList reads up to max identifiers (quoted or not) separated by a
// dot or a space.
func identList(s string, max int) ([]string, error) {
	var out []string
	i := 0
	for i < len(s) {
		if len(out) == max {
			return nil, fmt.Errorf("%w: %.80q: more names than a node has", ErrNotPlan, s)
		}
		if s[i] == '"' {
			var b strings.Builder
			j := i + 1
			for ; j < len(s); j++ {
				if s[j] == '"' {
					if j+1 < len(s) && s[j+1] == '"' {
						b.WriteByte('"')
						j++
						continue
					}
					break
				}
				b.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, fmt.Errorf("%w: %.80q: an unterminated quoted name", ErrNotPlan, s)
			}
			out = append(out, b.String())
			i = j + 1
		} else {
			j := i
			for j < len(s) && s[j] != '.' && s[j] != ' ' {
				j++
			}
			if j == i {
				return nil, fmt.Errorf("%w: %.80q: an empty name", ErrNotPlan, s)
			}
			out = append(out, s[i:j])
			i = j
		}
		if i < len(s) {
			if s[i] != '.' && s[i] != ' ' {
				return nil, fmt.Errorf("%w: %.80q: unexpected %q after a name", ErrNotPlan, s, s[i])
			}
			i++
			if i == len(s) {
				return nil, fmt.Errorf("%w: %.80q: ends with a separator", ErrNotPlan, s)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no name", ErrNotPlan)
	}
	return out, nil
}
