package querystats

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func TestHDRIndex(t *testing.T) {
	exact, mapped := newHist(), newHist()
	for v := range int64(hotMax) {
		i := hdrIndex(v)
		if i < 0 || i >= hotLen {
			t.Fatalf("hdrIndex(%d) = %d, out of [0, %d)", v, i, hotLen)
		}
		if lo := hdrValue(i); lo > v || hdrIndex(lo) != i {
			t.Fatalf("hdrValue(%d) = %d for %d", i, lo, v)
		}
		exact.RecordValue(v)
		mapped.RecordValue(hdrValue(i))
	}
	a, err := exact.Encode()
	if err != nil {
		t.Fatal(err)
	}
	b, err := mapped.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("recording bucket values differs from recording the values")
	}
}

// TestHotEqualsSparse: dense counts, folded, give the same rows (the
// histograms included) as recording every call in the histogram, with
// reads and merges between calls.
func TestHotEqualsSparse(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	hot, plain := NewSet(), NewSet()
	other := NewSet()
	// plain's Stats are in no Set, so they never get dense counts.
	add := func(s *Set, fp string, at, d int64, failed bool) {
		if s != plain {
			s.AddAt(fp, "q "+fp, at, d, failed)
			return
		}
		st, ok := s.m[fp]
		if !ok {
			st = newStats(fp, "q "+fp)
			s.m[fp] = st
		}
		st.add("q "+fp, at, d, failed)
	}
	fps := []string{"a", "b", "c"}
	for i := range 300_000 {
		fp := fps[r.IntN(len(fps))]
		d := int64(r.ExpFloat64() * 3000)
		switch r.IntN(50) {
		case 0:
			d = NoDuration
		case 1:
			d = hotMax + r.Int64N(1e9)
		case 2:
			d = hotMax - 1
		}
		at := int64(i)
		failed := r.IntN(30) == 0
		if i%3 == 0 {
			add(other, fp, at, d, failed)
		} else {
			add(hot, fp, at, d, failed)
		}
		add(plain, fp, at, d, failed)
		if i == 150_000 {
			hot.Get("a") // a read between calls folds the counts
		}
	}
	for i := range 3 * 65536 {
		// One bucket, past what a dense count holds.
		add(hot, "d", int64(i), 7, false)
		add(plain, "d", int64(i), 7, false)
	}
	if len(hot.hot) == 0 {
		t.Fatal("no fingerprint got dense counts")
	}
	hot.Merge(other)
	if got, want := rowsJSON(t, hot), rowsJSON(t, plain); got != want {
		t.Errorf("rows with dense counts differ:\n%s\nwant\n%s", got, want)
	}
}
