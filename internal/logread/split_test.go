package logread

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/event"
)

// statementAllLog writes a log in the log_statement = 'all' style, where
// a statement and its duration are on different lines, from interleaved
// sessions, with multi-line statements, parameters and failures: the
// pairs a split must not tear apart.
func statementAllLog(n int) string {
	var b strings.Builder
	for i := range n {
		sess := i % 5
		pre := fmt.Sprintf("2026-11-22 08:%02d:%02d.%03d UTC [%d] app@shop/web 6571e2a3.%x ", i/60000%60, i/1000%60, i%1000, 100+sess, 100+sess)
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, "%sLOG:  statement: SELECT %d,\n\t'multi'\n", pre, i)
		case 1:
			fmt.Fprintf(&b, "%sLOG:  execute <unnamed>: SELECT $1\n%sDETAIL:  parameters: $1 = '%d'\n", pre, pre, i)
		case 2:
			if i%7 == 2 {
				fmt.Fprintf(&b, "%sLOG:  statement: SELECT 1/0 -- %d\n%sERROR:  division by zero\n%sSTATEMENT:  SELECT 1/0 -- %d\n", pre, i, pre, pre, i)
				continue
			}
			fmt.Fprintf(&b, "%sLOG:  statement: UPDATE t SET v = %d\n", pre, i)
		case 3:
			fmt.Fprintf(&b, "%sLOG:  duration: 0.%03d ms\n", pre, i%1000)
			continue
		}
		// Most statements end before the next session speaks, some after.
		if i%3 != 0 {
			fmt.Fprintf(&b, "%sLOG:  duration: 1.%03d ms\n", pre, i%1000)
		}
	}
	return b.String()
}

// eventKey is what must survive splitting: everything but the line.
func eventKey(ev *event.Event) string {
	return fmt.Sprintf("%s|%s|%d|%d|%q|%v|%v|%s", ev.Kind, ev.Session, ev.Time, ev.Duration, ev.Query, ev.Params, ev.Failed, ev.SQLState)
}

func TestOpenSplitJoinsBoundaries(t *testing.T) {
	old := minSplitPart
	minSplitPart = 1
	defer func() { minSplitPart = old }()

	dir := t.TempDir()
	path := filepath.Join(dir, "statement_all.log")
	if err := os.WriteFile(path, []byte(statementAllLog(400)), 0o644); err != nil {
		t.Fatal(err)
	}
	whole, wholeCounts := readAll(t, path, Options{Prefix: benchPrefix})
	var want []string
	for _, ev := range whole {
		want = append(want, eventKey(ev))
	}
	slices.Sort(want)

	for _, n := range []int{2, 3, 5, 8, 13, 29, 64} {
		readers, err := OpenSplit(path, Options{Prefix: benchPrefix}, n)
		if err != nil {
			t.Fatal(err)
		}
		if len(readers) < 2 {
			t.Fatalf("n=%d: %d parts", n, len(readers))
		}
		// Read the parts at once, as analyze does, so that either side
		// of a boundary may finish first.
		keys := make([][]string, len(readers))
		var wg sync.WaitGroup
		for i, r := range readers {
			wg.Go(func() {
				for ev, err := range event.All(r) {
					if err != nil {
						t.Error(err)
						return
					}
					keys[i] = append(keys[i], eventKey(ev))
				}
			})
		}
		wg.Wait()
		got := slices.Concat(keys...)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("n=%d (%d parts): %d events, want %d; first difference: %s", n, len(readers), len(got), len(want), firstDiff(got, want))
		}
		sum := newCounters()
		for _, r := range readers {
			sum.Add(r.Counters())
			r.Close()
		}
		if sum.Total != wholeCounts.Total || sum.Parsed != wholeCounts.Parsed || sum.SkippedTotal() != wholeCounts.SkippedTotal() {
			t.Errorf("n=%d: parts count %d lines (%d parsed, %d skipped), whole file %d (%d, %d)",
				n, sum.Total, sum.Parsed, sum.SkippedTotal(), wholeCounts.Total, wholeCounts.Parsed, wholeCounts.SkippedTotal())
		}
	}
}

// TestOpenSplitCompressed: a compressed file is read whole.
func TestOpenSplitCompressed(t *testing.T) {
	old := minSplitPart
	minSplitPart = 1
	defer func() { minSplitPart = old }()
	path := writeFile(t, t.TempDir(), "x.log.gz", compressWith(t, "gzip", []byte(statementAllLog(100))))
	readers, err := OpenSplit(path, Options{Prefix: benchPrefix}, 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(readers) != 1 {
		t.Errorf("compressed file split into %d parts", len(readers))
	}
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("got %s, want %s", a[i], b[i])
		}
	}
	return "one is a prefix of the other"
}
