package plan

import (
	"strconv"
	"strings"
)

// Format is the form a plan was written in.
type Format string

// Formats of plans.
const (
	// FormatJSON: EXPLAIN (FORMAT JSON), or auto_explain.log_format = json.
	FormatJSON Format = "json"
	// FormatText: EXPLAIN's default text format, or auto_explain's.
	FormatText Format = "text"
)

// Plan is one statement's plan: a tree of nodes and what EXPLAIN says of
// the statement as a whole.
type Plan struct {
	Root *Node `json:"root"`
	// Analyzed: the statement ran (EXPLAIN ANALYZE, auto_explain with
	// log_analyze) and the nodes have Actual figures.
	Analyzed bool `json:"analyzed"`
	// Timing: the actual figures include times (not TIMING OFF).
	Timing bool `json:"timing,omitempty"`
	// Buffers: the nodes have Buffers figures.
	Buffers bool `json:"buffers,omitempty"`
	// PlanningMS and ExecutionMS are EXPLAIN ANALYZE's summary, -1 when
	// the plan does not say (auto_explain never gives the planning time).
	PlanningMS  float64 `json:"planning_ms"`
	ExecutionMS float64 `json:"execution_ms"`
	// JIT is the JIT summary of the statement, nil without JIT.
	JIT *JIT `json:"jit,omitempty"`
	// Settings are the settings EXPLAIN (SETTINGS) or
	// auto_explain.log_settings listed: those that differ from their
	// built-in default and touch planning.
	Settings map[string]string `json:"settings,omitempty"`
	// QueryText is auto_explain's "Query Text": the statement as sent,
	// with whatever values it holds. It is never written as JSON.
	QueryText string `json:"-"`
}

// JIT is what JIT compilation cost a statement.
type JIT struct {
	Functions int     `json:"functions"`
	TotalMS   float64 `json:"total_ms"`
}

// Node is one node of a plan. Fields EXPLAIN did not write are zero;
// Actual and Buffers are nil when the plan was not analyzed or buffers
// were not asked for.
type Node struct {
	// Type is EXPLAIN's "Node Type" in its JSON format ("Seq Scan",
	// "Aggregate", "Hash Join", "ModifyTable", "Custom Scan").
	Type string `json:"type"`
	// Strategy of an Aggregate or SetOp: "Plain", "Sorted", "Hashed",
	// "Mixed".
	Strategy string `json:"strategy,omitempty"`
	// PartialMode of an Aggregate: "Partial" or "Finalize" ("Simple" is
	// left empty).
	PartialMode string `json:"partial_mode,omitempty"`
	// JoinType of a join: "Inner", "Left", "Full", "Right", "Semi",
	// "Anti", "Right Anti".
	JoinType string `json:"join_type,omitempty"`
	// Operation of a ModifyTable or Foreign Scan: "Insert", "Update",
	// "Delete", "Merge" ("Select" is left empty).
	Operation string `json:"operation,omitempty"`
	// Provider is a Custom Scan's provider ("Custom Scan (Citus
	// Adaptive)").
	Provider string `json:"provider,omitempty"`
	// Parallel: a parallel-aware node ("Parallel Seq Scan").
	Parallel bool `json:"parallel,omitempty"`
	// Async: an async-capable node ("Async Foreign Scan").
	Async bool `json:"async,omitempty"`
	// Backward: an index scan in backward direction.
	Backward bool `json:"backward,omitempty"`

	// Relation, Schema, Alias: the relation a scan or modification
	// reads or writes (Schema only with VERBOSE). Alias is the name the
	// query gives it, equal to Relation when the query gives none.
	Relation string `json:"relation,omitempty"`
	Schema   string `json:"schema,omitempty"`
	Alias    string `json:"alias,omitempty"`
	// Index is the index of an Index Scan, Index Only Scan or Bitmap
	// Index Scan.
	Index string `json:"index,omitempty"`
	// CTE, Function: the CTE of a CTE or WorkTable Scan, the function of
	// a Function Scan.
	CTE      string `json:"cte,omitempty"`
	Function string `json:"function,omitempty"`
	// Subplan is the name of the subplan this node starts: "SubPlan 1",
	// "InitPlan 1 (returns $0)", "CTE big".
	Subplan string `json:"subplan,omitempty"`

	// Conditions and keys, as EXPLAIN deparses them.
	Filter      string   `json:"filter,omitempty"`
	IndexCond   string   `json:"index_cond,omitempty"`
	RecheckCond string   `json:"recheck_cond,omitempty"`
	JoinFilter  string   `json:"join_filter,omitempty"`
	HashCond    string   `json:"hash_cond,omitempty"`
	MergeCond   string   `json:"merge_cond,omitempty"`
	SortKey     []string `json:"sort_key,omitempty"`
	GroupKey    []string `json:"group_key,omitempty"`

	// Estimates.
	StartupCost float64 `json:"startup_cost"`
	TotalCost   float64 `json:"total_cost"`
	PlanRows    float64 `json:"plan_rows"`
	PlanWidth   int     `json:"plan_width"`

	WorkersPlanned  int `json:"workers_planned,omitempty"`
	WorkersLaunched int `json:"workers_launched,omitempty"`

	Actual  *Actual  `json:"actual,omitempty"`
	Buffers *Buffers `json:"buffers,omitempty"`
	// Sort, Hash and HashAgg hold how a sort, a hash table or a hashed
	// aggregate used memory and disk, when analyzed.
	Sort    *Sort    `json:"sort,omitempty"`
	Hash    *Hash    `json:"hash,omitempty"`
	HashAgg *HashAgg `json:"hash_agg,omitempty"`

	// Props are the other properties EXPLAIN wrote ("Heap Fetches",
	// "Cache Key", "Output"...), in order, for display.
	Props []Prop `json:"props,omitempty"`

	Children []*Node `json:"children,omitempty"`
}

// Prop is a property of a node that the model does not name.
type Prop struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Actual is what an analyzed node did. Times are per loop, as EXPLAIN
// prints them; rows too.
type Actual struct {
	StartupMS float64 `json:"startup_ms"`
	TotalMS   float64 `json:"total_ms"`
	Rows      float64 `json:"rows"`
	Loops     float64 `json:"loops"`
	// NeverExecuted: the node did not run (loops 0).
	NeverExecuted         bool    `json:"never_executed,omitempty"`
	RemovedByFilter       float64 `json:"removed_by_filter,omitempty"`
	RemovedByJoinFilter   float64 `json:"removed_by_join_filter,omitempty"`
	RemovedByIndexRecheck float64 `json:"removed_by_index_recheck,omitempty"`
}

// Buffers are a node's buffer accesses, in blocks, its children's
// included (as EXPLAIN counts them).
type Buffers struct {
	SharedHit     int64 `json:"shared_hit"`
	SharedRead    int64 `json:"shared_read"`
	SharedDirtied int64 `json:"shared_dirtied,omitempty"`
	SharedWritten int64 `json:"shared_written,omitempty"`
	LocalHit      int64 `json:"local_hit,omitempty"`
	LocalRead     int64 `json:"local_read,omitempty"`
	LocalDirtied  int64 `json:"local_dirtied,omitempty"`
	LocalWritten  int64 `json:"local_written,omitempty"`
	TempRead      int64 `json:"temp_read,omitempty"`
	TempWritten   int64 `json:"temp_written,omitempty"`
	// ReadMS and WriteMS are the I/O timings (track_io_timing).
	ReadMS  float64 `json:"read_ms,omitempty"`
	WriteMS float64 `json:"write_ms,omitempty"`
}

// Sort is how a Sort node sorted.
type Sort struct {
	// Method: "quicksort", "top-N heapsort", "external merge",
	// "external sort".
	Method string `json:"method"`
	// SpaceKB of SpaceType "Memory" or "Disk".
	SpaceKB   int64  `json:"space_kb"`
	SpaceType string `json:"space_type"`
}

// Disk reports whether the sort spilled to disk.
func (s *Sort) Disk() bool {
	return s != nil && (s.SpaceType == "Disk" || strings.HasPrefix(s.Method, "external"))
}

// Hash is a Hash node's table.
type Hash struct {
	Buckets         int64 `json:"buckets"`
	OriginalBuckets int64 `json:"original_buckets"`
	Batches         int64 `json:"batches"`
	OriginalBatches int64 `json:"original_batches"`
	PeakMemoryKB    int64 `json:"peak_memory_kb"`
}

// Disk reports whether the hash table was split in batches on disk.
func (h *Hash) Disk() bool { return h != nil && h.Batches > 1 }

// HashAgg is a hashed aggregate's memory and spill.
type HashAgg struct {
	PlannedPartitions int64 `json:"planned_partitions,omitempty"`
	Batches           int64 `json:"batches"`
	PeakMemoryKB      int64 `json:"peak_memory_kb"`
	DiskKB            int64 `json:"disk_kb,omitempty"`
}

// Disk reports whether the aggregate spilled.
func (h *HashAgg) Disk() bool { return h != nil && (h.Batches > 1 || h.DiskKB > 0) }

// Spilled reports whether the node wrote to disk for lack of work_mem: a
// sort, hash or hashed aggregate that went to disk.
func (n *Node) Spilled() bool {
	return n.Sort.Disk() || n.Hash.Disk() || n.HashAgg.Disk()
}

// Walk calls f on n and every node below it, depth first, parents first;
// it stops early when f returns false.
func (n *Node) Walk(f func(*Node) bool) bool {
	if n == nil {
		return true
	}
	if !f(n) {
		return false
	}
	for _, c := range n.Children {
		if !c.Walk(f) {
			return false
		}
	}
	return true
}

// Nodes returns the nodes of the plan in Walk's order.
func (p *Plan) Nodes() []*Node {
	var out []*Node
	if p != nil {
		p.Root.Walk(func(n *Node) bool { out = append(out, n); return true })
	}
	return out
}

// Relations returns the relations the plan reads or writes, each once, in
// order of appearance.
func (p *Plan) Relations() []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range p.Nodes() {
		if n.Relation != "" && !seen[n.Relation] {
			seen[n.Relation] = true
			out = append(out, n.Relation)
		}
	}
	return out
}

// Indexes returns the indexes the plan reads, each once, in order of
// appearance.
func (p *Plan) Indexes() []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range p.Nodes() {
		if n.Index != "" && !seen[n.Index] {
			seen[n.Index] = true
			out = append(out, n.Index)
		}
	}
	return out
}

// Name is the node's name as EXPLAIN's text format begins its line:
// "Seq Scan", "Partial HashAggregate", "Hash Left Join", "Parallel Index
// Only Scan Backward", "Update", "Custom Scan (Citus Adaptive)".
func (n *Node) Name() string {
	var b strings.Builder
	if n.Parallel {
		b.WriteString("Parallel ")
	}
	if n.Async {
		b.WriteString("Async ")
	}
	switch n.Type {
	case "Aggregate":
		if n.PartialMode != "" {
			b.WriteString(n.PartialMode + " ")
		}
		b.WriteString(map[string]string{"Sorted": "GroupAggregate", "Hashed": "HashAggregate", "Mixed": "MixedAggregate"}[n.Strategy])
		if n.Strategy == "" || n.Strategy == "Plain" {
			b.WriteString("Aggregate")
		}
	case "SetOp":
		if n.Strategy == "Hashed" {
			b.WriteString("HashSetOp")
		} else {
			b.WriteString("SetOp")
		}
	case "ModifyTable":
		b.WriteString(cmpOr(n.Operation, "ModifyTable"))
	case "Foreign Scan":
		if n.Operation != "" {
			b.WriteString("Foreign " + n.Operation)
		} else {
			b.WriteString("Foreign Scan")
		}
	case "Custom Scan":
		b.WriteString("Custom Scan (" + n.Provider + ")")
	case "Nested Loop", "Hash Join", "Merge Join":
		base := strings.TrimSuffix(n.Type, " Join")
		b.WriteString(base)
		if n.JoinType != "" && n.JoinType != "Inner" {
			b.WriteString(" " + n.JoinType + " Join")
		} else if n.Type != "Nested Loop" {
			b.WriteString(" Join")
		}
	default:
		b.WriteString(n.Type)
	}
	if n.Backward {
		b.WriteString(" Backward")
	}
	return b.String()
}

// Label is the node's line in EXPLAIN's text format, without the
// figures: "Index Scan using customers_email_idx on customers",
// "Seq Scan on orders o", "Hash Join", "CTE Scan on big".
func (n *Node) Label() string {
	s := n.Name()
	switch n.Type {
	case "Index Scan", "Index Only Scan":
		s += " using " + quoteIdent(n.Index)
	case "Bitmap Index Scan":
		return s + " on " + quoteIdent(n.Index)
	}
	if t := n.target(); t != "" {
		s += " on " + t
	}
	return s
}

// target is what a node's label names after "on": the relation (with its
// schema and alias), the CTE, the function.
func (n *Node) target() string {
	var name string
	switch {
	case n.Relation != "":
		name = quoteIdent(n.Relation)
		if n.Schema != "" {
			name = quoteIdent(n.Schema) + "." + name
		}
		if n.Alias != "" && n.Alias != n.Relation {
			name += " " + quoteIdent(n.Alias)
		}
	case n.CTE != "":
		name = quoteIdent(n.CTE)
		if n.Alias != "" && n.Alias != n.CTE {
			name += " " + quoteIdent(n.Alias)
		}
	case n.Function != "":
		name = quoteIdent(n.Function)
		if n.Alias != "" && n.Alias != n.Function {
			name += " " + quoteIdent(n.Alias)
		}
	case n.Alias != "":
		name = quoteIdent(n.Alias)
	}
	return name
}

// Scan reports whether n reads a relation, an index, a CTE, a function or
// values: a leaf of the plan's data flow.
func (n *Node) Scan() bool {
	return strings.HasSuffix(n.Type, " Scan") && n.Type != "Custom Scan" || n.Relation != "" && n.Type != "ModifyTable"
}

// Join reports whether n joins its children.
func (n *Node) Join() bool {
	return n.Type == "Nested Loop" || n.Type == "Hash Join" || n.Type == "Merge Join"
}

// quoteIdent quotes an identifier as EXPLAIN does (quote_identifier):
// only when it is not a plain lower-case name.
func quoteIdent(s string) string {
	if s == "" {
		return s
	}
	plain := true
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || r == '_' || i > 0 && (r >= '0' && r <= '9' || r == '$')) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
