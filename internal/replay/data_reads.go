package replay

import (
	"encoding/binary"
	"sync"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// The target's data differing from the start, proven by recurrence.
//
// A differing answer of a statement that reads tables no concurrent
// transaction of the original touched is what the target's data would
// explain (querystats.CauseTargetData). Once, it proves nothing: on an
// identical copy of the source, a race the capture could not see (an
// answer that the original's commit order alone does not fix) gives the
// same (issue 77: 4 of 43,100 answers, range reads on two tables,
// failed a replay onto a copy byte for byte the starting state). Data
// that differs is read differently each time its rows are read: the
// replay counts the target's data for the rows read differently more
// than once, and the others as suspect (querystats.CauseSuspectData),
// which do not fail it.

// readKey names the rows execution ev reads, for dataReads: by key, key
// range or whole relation when the sync names them (syncdep.Reach.
// ReadKey), else the statement's text with its parameters (the same
// statement with the same values reads the same rows), in its database.
func readKey(ev *event.Event, sy synced) string {
	if k := sy.reach.ReadKey(); k != "" {
		return "R" + k
	}
	b := make([]byte, 0, 1+len(ev.Database)+len(ev.Query)+16)
	b = append(b, 'Q')
	b = binary.AppendUvarint(b, uint64(len(ev.Database)))
	b = append(b, ev.Database...)
	b = binary.AppendUvarint(b, uint64(len(ev.Query)))
	b = append(b, ev.Query...)
	for _, p := range ev.Params {
		if p.Null {
			b = append(b, 0)
			continue
		}
		b = append(b, 1)
		b = binary.AppendUvarint(b, uint64(len(p.Value)))
		b = append(b, p.Value...)
	}
	return string(b)
}

// dataReads are the executions the target's data would explain, by the
// rows they read (readKey). Safe for concurrent use.
type dataReads struct {
	mu sync.Mutex
	m  map[string]*dataRead
	// proven are the tables ("schema.name") whose digests matched the
	// recording's start on the target before the first statement
	// (SetStartProven): their rows are the start's, so answers on them
	// read differently, however often, stay suspect.
	proven map[string]bool
}

// dataRead is what dataReads holds for one readKey: how many executions
// read those rows differently, by table, and the indices of those kept
// among the differing answers (answerNotes).
type dataRead struct {
	n       int64
	byTable map[string]int64
	kept    []int
}

// add counts an execution that reads tables, the rows key names, kept
// at index kept among the differing answers (-1: not kept).
func (d *dataReads) add(key string, tables []string, kept int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[string]*dataRead{}
	}
	e := d.m[key]
	if e == nil {
		e = &dataRead{byTable: map[string]int64{}}
		d.m[key] = e
	}
	e.n++
	for _, t := range tables {
		e.byTable[t]++
	}
	if kept >= 0 {
		e.kept = append(e.kept, kept)
	}
}

// recurs reports whether the rows of e were read differently more than
// once: the target's data, proven; otherwise suspect.
func (e *dataRead) recurs() bool { return e.n > 1 }

// targetData reports whether e counts as the target's data: its rows
// read differently more than once, on a table no start digest proved
// equal. Callers hold d.mu.
func (d *dataReads) targetData(e *dataRead) bool {
	if !e.recurs() {
		return false
	}
	if len(d.proven) == 0 || len(e.byTable) == 0 {
		return true
	}
	for t := range e.byTable {
		if !d.proven[t] {
			return true
		}
	}
	return false
}

// setProven records the tables the start's digests proved equal.
func (d *dataReads) setProven(tables []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.proven = make(map[string]bool, len(tables))
	for _, t := range tables {
		d.proven[t] = true
	}
}

// split is the executions of the target's data (rows read differently
// more than once) and the suspect ones, each with its count by table
// (nil when none).
func (d *dataReads) split() (data int64, dataBy map[string]int64, suspect int64, suspectBy map[string]int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range d.m {
		n, by := &suspect, &suspectBy
		if d.targetData(e) {
			n, by = &data, &dataBy
		}
		*n += e.n
		if *by == nil {
			*by = map[string]int64{}
		}
		for t, c := range e.byTable {
			(*by)[t] += c
		}
	}
	return data, nilIfEmpty(dataBy), suspect, nilIfEmpty(suspectBy)
}

func nilIfEmpty(m map[string]int64) map[string]int64 {
	if len(m) == 0 {
		return nil
	}
	return m
}

// mark gives the kept differing answers whose rows were read differently
// once their cause: suspect (querystats.CauseSuspectData).
func (d *dataReads) mark(kept []results.DifferingAnswer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range d.m {
		if d.targetData(e) {
			continue
		}
		for _, i := range e.kept {
			if i < len(kept) {
				kept[i].Cause = querystats.CauseSuspectData
			}
		}
	}
}
