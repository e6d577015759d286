package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// maxDepth bounds the nesting of a plan read; deeper input is refused
// rather than risking the stack on a corrupt or hostile log.
const maxDepth = 1000

// ErrNotPlan is wrapped by the errors of the readers when the input holds
// no plan at all.
var ErrNotPlan = errors.New("not a plan")

// ParseJSON reads a plan in EXPLAIN's JSON format: the output of EXPLAIN
// (FORMAT JSON), an array of one object with "Plan", or auto_explain's
// JSON, one object with "Query Text" and "Plan".
func ParseJSON(data []byte) (*Plan, error) {
	data = bytes.TrimSpace(data)
	var top map[string]json.RawMessage
	switch {
	case len(data) > 0 && data[0] == '[':
		var arr []map[string]json.RawMessage
		if err := json.Unmarshal(data, &arr); err != nil {
			return nil, fmt.Errorf("plan JSON: %w", err)
		}
		if len(arr) != 1 {
			return nil, fmt.Errorf("plan JSON: %w: an array of %d objects, want 1", ErrNotPlan, len(arr))
		}
		top = arr[0]
	case len(data) > 0 && data[0] == '{':
		if err := json.Unmarshal(data, &top); err != nil {
			return nil, fmt.Errorf("plan JSON: %w", err)
		}
	default:
		return nil, fmt.Errorf("plan JSON: %w: want an object or an array", ErrNotPlan)
	}
	raw, ok := top["Plan"]
	if !ok {
		return nil, fmt.Errorf("plan JSON: %w: no \"Plan\"", ErrNotPlan)
	}
	p := &Plan{PlanningMS: -1, ExecutionMS: -1}
	var err error
	if p.Root, err = readJSONNode(raw, 0); err != nil {
		return nil, err
	}
	o := jsonObject(top)
	p.QueryText = o.str("Query Text")
	if v, ok := o.num("Planning Time"); ok {
		p.PlanningMS = v
	}
	if v, ok := o.num("Execution Time"); ok {
		p.ExecutionMS = v
	}
	if raw, ok := top["JIT"]; ok {
		var j map[string]json.RawMessage
		if json.Unmarshal(raw, &j) == nil {
			jo := jsonObject(j)
			p.JIT = &JIT{Functions: int(jo.int("Functions"))}
			if t, ok := j["Timing"]; ok {
				var tm map[string]json.RawMessage
				if json.Unmarshal(t, &tm) == nil {
					p.JIT.TotalMS, _ = jsonObject(tm).num("Total")
				}
			}
		}
	}
	if raw, ok := top["Settings"]; ok {
		var s map[string]string
		if json.Unmarshal(raw, &s) == nil && len(s) > 0 {
			p.Settings = s
		}
	}
	p.Root.Walk(func(n *Node) bool {
		if n.Actual != nil {
			p.Analyzed = true
			if n.Actual.TotalMS > 0 || n.Actual.StartupMS > 0 {
				p.Timing = true
			}
		}
		if n.Buffers != nil {
			p.Buffers = true
		}
		return true
	})
	return p, nil
}

// jsonObject reads typed fields of a JSON object, ignoring those of
// another type than expected: a plan from a newer server may change a
// field, and the rest of it is still worth reading.
type jsonObject map[string]json.RawMessage

func (o jsonObject) str(k string) string {
	var s string
	if raw, ok := o[k]; ok && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ""
}

func (o jsonObject) num(k string) (float64, bool) {
	var v float64
	if raw, ok := o[k]; ok && json.Unmarshal(raw, &v) == nil {
		return v, true
	}
	return 0, false
}

func (o jsonObject) int(k string) int64 {
	v, _ := o.num(k)
	return int64(v)
}

func (o jsonObject) boolean(k string) bool {
	var b bool
	if raw, ok := o[k]; ok && json.Unmarshal(raw, &b) == nil {
		return b
	}
	return false
}

func (o jsonObject) strs(k string) []string {
	var s []string
	if raw, ok := o[k]; ok && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return nil
}

// jsonKnown are the node keys read into fields; the others become Props.
var jsonKnown = map[string]bool{}

func init() {
	for _, k := range []string{
		"Node Type", "Strategy", "Partial Mode", "Join Type", "Operation", "Custom Plan Provider",
		"Parallel Aware", "Async Capable", "Scan Direction", "Relation Name", "Schema", "Alias", "Index Name",
		"CTE Name", "Function Name", "Subplan Name", "Parent Relationship", "Filter", "Index Cond",
		"Recheck Cond", "Join Filter", "Hash Cond", "Merge Cond", "Sort Key", "Group Key",
		"Startup Cost", "Total Cost", "Plan Rows", "Plan Width", "Workers Planned", "Workers Launched",
		"Actual Startup Time", "Actual Total Time", "Actual Rows", "Actual Loops",
		"Rows Removed by Filter", "Rows Removed by Join Filter", "Rows Removed by Index Recheck",
		"Sort Method", "Sort Space Used", "Sort Space Type",
		"Hash Buckets", "Original Hash Buckets", "Hash Batches", "Original Hash Batches", "Peak Memory Usage",
		"HashAgg Batches", "Disk Usage", "Planned Partitions", "Plans", "Workers", "Inner Unique",
	} {
		jsonKnown[k] = true
	}
	for _, k := range bufferKeys {
		jsonKnown[k.json] = true
	}
	for _, k := range []string{"I/O Read Time", "I/O Write Time", "Shared I/O Read Time", "Shared I/O Write Time",
		"Local I/O Read Time", "Local I/O Write Time", "Temp I/O Read Time", "Temp I/O Write Time"} {
		jsonKnown[k] = true
	}
}

// bufferKeys map EXPLAIN's JSON buffer keys to Buffers fields.
var bufferKeys = []struct {
	json string
	ptr  func(*Buffers) *int64
}{
	{"Shared Hit Blocks", func(b *Buffers) *int64 { return &b.SharedHit }},
	{"Shared Read Blocks", func(b *Buffers) *int64 { return &b.SharedRead }},
	{"Shared Dirtied Blocks", func(b *Buffers) *int64 { return &b.SharedDirtied }},
	{"Shared Written Blocks", func(b *Buffers) *int64 { return &b.SharedWritten }},
	{"Local Hit Blocks", func(b *Buffers) *int64 { return &b.LocalHit }},
	{"Local Read Blocks", func(b *Buffers) *int64 { return &b.LocalRead }},
	{"Local Dirtied Blocks", func(b *Buffers) *int64 { return &b.LocalDirtied }},
	{"Local Written Blocks", func(b *Buffers) *int64 { return &b.LocalWritten }},
	{"Temp Read Blocks", func(b *Buffers) *int64 { return &b.TempRead }},
	{"Temp Written Blocks", func(b *Buffers) *int64 { return &b.TempWritten }},
}

func readJSONNode(raw json.RawMessage, depth int) (*Node, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("plan JSON: nested deeper than %d nodes", maxDepth)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("plan JSON: a node: %w", err)
	}
	o := jsonObject(m)
	n := &Node{Type: o.str("Node Type")}
	if n.Type == "" {
		return nil, fmt.Errorf("plan JSON: %w: a node without \"Node Type\"", ErrNotPlan)
	}
	n.Strategy = o.str("Strategy")
	if pm := o.str("Partial Mode"); pm != "Simple" {
		n.PartialMode = pm
	}
	n.JoinType = o.str("Join Type")
	if op := o.str("Operation"); op != "Select" {
		n.Operation = op
	}
	n.Provider = o.str("Custom Plan Provider")
	n.Parallel = o.boolean("Parallel Aware")
	n.Async = o.boolean("Async Capable")
	n.Backward = o.str("Scan Direction") == "Backward"
	n.Relation, n.Schema, n.Alias = o.str("Relation Name"), o.str("Schema"), o.str("Alias")
	n.Index = o.str("Index Name")
	n.CTE, n.Function = o.str("CTE Name"), o.str("Function Name")
	n.Subplan = o.str("Subplan Name")
	n.Filter, n.IndexCond, n.RecheckCond = o.str("Filter"), o.str("Index Cond"), o.str("Recheck Cond")
	n.JoinFilter, n.HashCond, n.MergeCond = o.str("Join Filter"), o.str("Hash Cond"), o.str("Merge Cond")
	n.SortKey, n.GroupKey = o.strs("Sort Key"), o.strs("Group Key")
	n.StartupCost, _ = o.num("Startup Cost")
	n.TotalCost, _ = o.num("Total Cost")
	n.PlanRows, _ = o.num("Plan Rows")
	n.PlanWidth = int(o.int("Plan Width"))
	n.WorkersPlanned, n.WorkersLaunched = int(o.int("Workers Planned")), int(o.int("Workers Launched"))
	if loops, ok := o.num("Actual Loops"); ok {
		a := &Actual{Loops: loops, NeverExecuted: loops == 0}
		a.StartupMS, _ = o.num("Actual Startup Time")
		a.TotalMS, _ = o.num("Actual Total Time")
		a.Rows, _ = o.num("Actual Rows")
		a.RemovedByFilter, _ = o.num("Rows Removed by Filter")
		a.RemovedByJoinFilter, _ = o.num("Rows Removed by Join Filter")
		a.RemovedByIndexRecheck, _ = o.num("Rows Removed by Index Recheck")
		n.Actual = a
	}
	if _, ok := m["Shared Hit Blocks"]; ok {
		b := &Buffers{}
		for _, k := range bufferKeys {
			*k.ptr(b) = o.int(k.json)
		}
		for _, k := range []string{"I/O Read Time", "Shared I/O Read Time", "Local I/O Read Time", "Temp I/O Read Time"} {
			v, _ := o.num(k)
			b.ReadMS += v
		}
		for _, k := range []string{"I/O Write Time", "Shared I/O Write Time", "Local I/O Write Time", "Temp I/O Write Time"} {
			v, _ := o.num(k)
			b.WriteMS += v
		}
		n.Buffers = b
	}
	if method := o.str("Sort Method"); method != "" {
		n.Sort = &Sort{Method: method, SpaceKB: o.int("Sort Space Used"), SpaceType: o.str("Sort Space Type")}
	}
	if _, ok := m["Hash Buckets"]; ok {
		n.Hash = &Hash{Buckets: o.int("Hash Buckets"), OriginalBuckets: o.int("Original Hash Buckets"),
			Batches: o.int("Hash Batches"), OriginalBatches: o.int("Original Hash Batches"), PeakMemoryKB: o.int("Peak Memory Usage")}
	}
	// Planned Partitions is written (as 0) for every hashed aggregate;
	// the text format writes it only when not 0.
	if _, batches := m["HashAgg Batches"]; batches || o.int("Planned Partitions") > 0 {
		n.HashAgg = &HashAgg{PlannedPartitions: o.int("Planned Partitions"), Batches: o.int("HashAgg Batches"),
			PeakMemoryKB: o.int("Peak Memory Usage"), DiskKB: o.int("Disk Usage")}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		if !jsonKnown[k] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		n.Props = append(n.Props, Prop{Key: k, Value: jsonText(m[k])})
	}
	if raw, ok := m["Plans"]; ok {
		var kids []json.RawMessage
		if err := json.Unmarshal(raw, &kids); err != nil {
			return nil, fmt.Errorf("plan JSON: \"Plans\": %w", err)
		}
		for _, k := range kids {
			c, err := readJSONNode(k, depth+1)
			if err != nil {
				return nil, err
			}
			n.Children = append(n.Children, c)
		}
	}
	return n, nil
}

// jsonText renders a JSON value for display: a string as it is, a list
// of strings joined by commas, anything else as JSON.
func jsonText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var ss []string
	if json.Unmarshal(raw, &ss) == nil {
		return strings.Join(ss, ", ")
	}
	var f float64
	if json.Unmarshal(raw, &f) == nil {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return string(bytes.TrimSpace(raw))
}
