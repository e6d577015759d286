package source_test

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/logread"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

const foldT0 = 1_714_557_600_000_000 // 2024-05-01T10:00:00Z in µs

// readAll reads a set's sources one after the other, as a replay does.
func readAll(t *testing.T, set *source.Set) []*event.Event {
	t.Helper()
	var out []*event.Event
	for _, src := range set.Sources() {
		for ev, err := range event.All(src) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, ev)
		}
	}
	return out
}

// foldLog is a log of sessions "a" and "b" repeated every second (their
// ids the same in every second, as a log's pids come back), each
// connecting, running two statements and disconnecting within the
// second; plus, before from and after to, a session "x" that the fold
// cuts. Times are µs after foldT0.
func foldLog(from, to int64) []*event.Event {
	var evs []*event.Event
	add := func(k event.Kind, s string, at int64) {
		evs = append(evs, &event.Event{Kind: k, Session: s, Database: "db", User: "u", Time: foldT0 + at, Line: int64(len(evs) + 1),
			Query: "SELECT " + s, Duration: event.NoDuration})
	}
	add(event.Connect, "x", from-2e6)
	add(event.Statement, "x", from-1e6)
	for sec := from; sec < to; sec += 1e6 {
		for i, s := range []string{"a", "b"} {
			off := int64(i) * 1000
			add(event.Connect, s, sec+off)
			add(event.Statement, s, sec+100_000+off)
			add(event.Execute, s, sec+500_000+off)
			add(event.Disconnect, s, sec+900_000+off)
		}
	}
	add(event.Statement, "x", to+1e6)
	add(event.Disconnect, "x", to+2e6)
	// In the order of their times, as a log's, numbered so.
	slices.SortStableFunc(evs, func(a, b *event.Event) int { return cmp.Compare(a.Time, b.Time) })
	for i, ev := range evs {
		ev.Line = int64(i + 1)
	}
	return evs
}

func TestFold(t *testing.T) {
	const span = 12e6 // 12 s of log from foldT0
	log := foldLog(0, span)
	for _, tc := range []struct {
		k   int
		sel source.Selection
	}{
		{k: 1}, {k: 2}, {k: 3}, {k: 4}, {k: 6},
		{k: 3, sel: source.Selection{StopAfter: 1e6}},
		{k: 3, sel: source.Selection{Start: foldT0 + 2e6, End: foldT0 + 11e6}},
		{k: 2, sel: source.Selection{Sessions: func(s string) bool { return strings.HasPrefix(s, "a") }}},
	} {
		t.Run(fmt.Sprintf("k%d_%d_%d_%d", tc.k, tc.sel.Start, tc.sel.End, tc.sel.StopAfter), func(t *testing.T) {
			width := int64(span)/int64(tc.k) + 1
			f := source.Fold{Of: source.Memory{Name: "mem", Events: log}, K: tc.k, First: foldT0, Width: width}
			sel := tc.sel
			set, err := f.Open(source.Options{Select: &sel})
			if err != nil {
				t.Fatal(err)
			}
			defer set.Close()
			got := readAll(t, set)

			lo, hi := int64(foldT0), int64(foldT0)+int64(tc.k)*width
			if sel.Start != 0 {
				lo = max(lo, sel.Start)
			}
			if sel.End != 0 {
				hi = min(hi, sel.End)
			}
			// What each slice should yield: its events in the window
			// (and the filter), in log order.
			want := map[int][]*event.Event{}
			var cut, cutExec, read int64
			for _, ev := range log {
				if read++; sel.StopAfter > 0 && ev.Time > hi+sel.StopAfter {
					// The last read: past the window by StopAfter.
					cut++
					if ev.IsExecution() {
						cutExec++
					}
					break
				}
				i := int((ev.Time - foldT0) / width)
				kept := ev.Time >= lo && ev.Time < hi
				if kept && sel.Sessions != nil && !sel.Sessions(fmt.Sprintf("%s#%d", ev.Session, i+1)) {
					kept = false
				}
				if !kept {
					cut++
					if ev.IsExecution() {
						cutExec++
					}
					continue
				}
				want[i] = append(want[i], ev)
			}
			gotBy := map[int][]*event.Event{}
			last := int64(0)
			for _, ev := range got {
				if ev.Time < last {
					t.Fatalf("events not in the order of their shifted times: %d after %d", ev.Time, last)
				}
				last = ev.Time
				if ev.Time < foldT0 || ev.Time >= foldT0+width {
					t.Errorf("event at %d µs, outside the first slice", ev.Time-foldT0)
				}
				i := int(ev.Lane)
				gotBy[i] = append(gotBy[i], ev)
				name, slice, ok := strings.Cut(ev.Session, "#")
				switch {
				case tc.k == 1 && ev.Session != name:
					t.Errorf("K=1 renamed %q", ev.Session)
				case tc.k > 1 && (!ok || slice != fmt.Sprint(i+1)):
					t.Errorf("session %q in lane %d", ev.Session, i)
				}
			}
			for i := range tc.k {
				w, g := want[i], gotBy[i]
				if len(w) != len(g) {
					t.Fatalf("slice %d: %d events, want %d", i, len(g), len(w))
				}
				for j := range w {
					orig := g[j].Time + int64(i)*width
					if orig != w[j].Time || g[j].Line != w[j].Line || g[j].Kind != w[j].Kind {
						t.Fatalf("slice %d event %d: line %d at %d, want line %d at %d", i, j, g[j].Line, orig, w[j].Line, w[j].Time)
					}
				}
			}
			// Counted once each: yielded + filtered = read.
			sc := set.Counts()
			if sum := int64(len(got)) + sc.Filtered.Events; sum != read {
				t.Errorf("events yielded %d + filtered %d = %d, want the %d read", len(got), sc.Filtered.Events, sum, read)
			}
			if sc.Filtered.Events != cut || sc.Filtered.Statements != cutExec {
				t.Errorf("filtered %+v, want %d events, %d statements", sc.Filtered, cut, cutExec)
			}
			d := set.Dropped()
			if d.Window+d.Filters+d.Own != cutExec {
				t.Errorf("dropped %+v, want %d statements in all", d, cutExec)
			}
		})
	}
	// The Memory's events are as they were: the fold copies what it
	// changes.
	if fresh := foldLog(0, span); !reflect.DeepEqual(fresh, log) {
		t.Error("the fold changed its input's events")
	}
}

// TestFoldOneIsUnfolded: a fold of one slice over the whole log yields the
// log's events, and counts what the log does.
func TestFoldOneIsUnfolded(t *testing.T) {
	log := foldLog(0, 5e6)
	mem := source.Memory{Name: "mem", Events: log}
	for _, sel := range []*source.Selection{nil, {}, {Start: foldT0 + 1e6, End: foldT0 + 3e6}} {
		var s1, s2 *source.Selection
		if sel != nil {
			c1, c2 := *sel, *sel
			s1, s2 = &c1, &c2
		}
		plain, err := mem.Open(source.Options{Select: s1})
		if err != nil {
			t.Fatal(err)
		}
		first, last := log[0].Time, log[len(log)-1].Time
		folded, err := source.Fold{Of: mem, K: 1, First: first, Width: last - first + 1}.Open(source.Options{Select: s2})
		if err != nil {
			t.Fatal(err)
		}
		a, b := readAll(t, plain), readAll(t, folded)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("selection %+v: the fold of one yields %d events, the log %d", sel, len(b), len(a))
		}
		if ca, cb := plain.Counts(), folded.Counts(); !reflect.DeepEqual(ca, cb) {
			t.Errorf("selection %+v: counts %+v, the log's %+v", sel, cb, ca)
		}
		if da, db := plain.Dropped(), folded.Dropped(); da != db {
			t.Errorf("selection %+v: dropped %+v, the log's %+v", sel, db, da)
		}
		plain.Close()
		folded.Close()
	}
}

// TestFoldRefuses: what cannot be folded.
func TestFoldRefuses(t *testing.T) {
	mem := source.Memory{Name: "mem", Events: foldLog(0, 2e6)}
	for _, f := range []source.Fold{
		{K: 2, Width: 1},
		{Of: mem, K: 0, Width: 1},
		{Of: mem, K: source.MaxFold + 1, Width: 1},
		{Of: mem, K: 2},
		{Of: source.Paths{"-"}, K: 2, Width: 1},
	} {
		if set, err := f.Open(source.Options{}); err == nil {
			set.Close()
			t.Errorf("%+v opened", f)
		}
	}
}

// TestFoldLines: a folded log counts each of its lines once, as the log
// does, and every event it read once: yielded or filtered.
func TestFoldLines(t *testing.T) {
	paths := source.Paths{"../logread/testdata/stderr/log_statement.log"}
	opts := source.Options{Log: logread.Options{Prefix: "%m [%p] %q%u@%d/%a "}}
	raw, err := paths.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	evs := readAll(t, raw)
	lines := raw.Counts().Lines
	raw.Close()
	first, last := evs[0].Time, evs[0].Time
	for _, ev := range evs {
		first, last = min(first, ev.Time), max(last, ev.Time)
	}
	for _, k := range []int{1, 2, 3} {
		opts.Select = &source.Selection{KeepOwn: true}
		set, err := source.Fold{Of: paths, K: k, First: first, Width: (last-first)/int64(k) + 1}.Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		got := readAll(t, set)
		sc := set.Counts()
		if !reflect.DeepEqual(sc.Lines, lines) {
			t.Errorf("K=%d: lines %+v, the log's %+v", k, sc.Lines, lines)
		}
		if n := int64(len(got)) + sc.Filtered.Events; n != int64(len(evs)) {
			t.Errorf("K=%d: %d events yielded + %d filtered, the log has %d", k, len(got), sc.Filtered.Events, len(evs))
		}
		if l := set.Lines(); l.Total != lines.Total {
			t.Errorf("K=%d: Lines %d, the log's %d", k, l.Total, lines.Total)
		}
		set.Close()
	}
}
