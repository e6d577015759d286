package timeline

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

const sec = int64(1_000_000)

func TestBuckets(t *testing.T) {
	tl := New()
	base := int64(1_700_000_000) * sec
	tl.Add(base+100, 1000, false)
	tl.Add(base+900_000, 3000, true)
	tl.Add(base+2*sec, -1, false) // untimed
	j := tl.JSON()
	if j.BucketMS != 1000 || len(j.Calls) != 3 {
		t.Fatalf("bucket_ms %d, %d buckets; want 1000 and 3", j.BucketMS, len(j.Calls))
	}
	if want := []int64{2, 0, 1}; !reflect.DeepEqual(j.Calls, want) {
		t.Errorf("calls %v, want %v", j.Calls, want)
	}
	if want := []int64{1, 0, 0}; !reflect.DeepEqual(j.Errors, want) {
		t.Errorf("errors %v, want %v", j.Errors, want)
	}
	// p95 of {1 ms, 3 ms} is 3 ms, within a bin (about 9%).
	if p := j.P95MS[0]; p < 2.7 || p > 3.3 {
		t.Errorf("p95 %v ms, want about 3", p)
	}
	if j.P95MS[2] != 0 {
		t.Errorf("p95 of a bucket without timed calls = %v, want 0", j.P95MS[2])
	}
	if j.Start != "2023-11-14T22:13:20.000000Z" {
		t.Errorf("start %s", j.Start)
	}
}

func TestBoundedAndWidened(t *testing.T) {
	tl := New()
	base := int64(1_700_000_000) * sec
	for i := range int64(3 * MaxBuckets) {
		tl.Add(base+i*sec, 10, false)
	}
	j := tl.JSON()
	if len(j.Calls) > MaxBuckets {
		t.Fatalf("%d buckets, want at most %d", len(j.Calls), MaxBuckets)
	}
	if j.BucketMS != 4000 {
		t.Errorf("bucket_ms %d, want 4000 after widening twice", j.BucketMS)
	}
	var total int64
	for _, c := range j.Calls {
		total += c
	}
	if total != 3*MaxBuckets {
		t.Errorf("%d calls, want %d", total, 3*MaxBuckets)
	}
}

// TestLongSpanBounded: six statements over 185 days make a few hundred
// buckets, not one a second: memory and JSON stay small.
func TestLongSpanBounded(t *testing.T) {
	tl := New()
	base := int64(1_700_000_000) * sec
	for i := range int64(6) {
		tl.Add(base+i*37*86400*sec, 10, false)
	}
	j := tl.JSON()
	if len(j.Calls) > MaxBuckets || len(j.Calls) < 100 {
		t.Fatalf("%d buckets of %d ms for 185 days, want a few hundred", len(j.Calls), j.BucketMS)
	}
	var total int64
	for _, c := range j.Calls {
		total += c
	}
	if total != 6 {
		t.Errorf("%d calls, want 6", total)
	}
	t.Logf("%d buckets of %s", len(j.Calls), time.Duration(j.BucketMS)*time.Millisecond)
}

// TestMergeEqualsOne: timelines built apart and merged equal one built
// from everything, even when one of them had to widen its buckets.
func TestMergeEqualsOne(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	base := int64(1_700_000_000) * sec
	all, a, b := New(), New(), New()
	for i := range 20000 {
		ts := base + r.Int64N(int64(2*MaxBuckets)*sec)
		if i%3 == 0 {
			ts = base + r.Int64N(100*sec) // b stays narrow
			b.Add(ts, r.Int64N(5000), i%7 == 0)
		} else {
			a.Add(ts, r.Int64N(5000), i%7 == 0)
		}
		all.Add(ts, 0, false)
	}
	a.Merge(b)
	ja, jall := a.JSON(), all.JSON()
	if ja.BucketMS != jall.BucketMS || !reflect.DeepEqual(ja.Calls, jall.Calls) || ja.Start != jall.Start {
		t.Errorf("merged: %d ms × %d buckets from %s; one: %d ms × %d from %s",
			ja.BucketMS, len(ja.Calls), ja.Start, jall.BucketMS, len(jall.Calls), jall.Start)
	}
}

func TestBins(t *testing.T) {
	prev := uint16(0)
	for d := int64(1); d < 1<<35; d = d*11/10 + 1 {
		b := bin(d)
		if b < prev {
			t.Fatalf("bin(%d) = %d < bin of a smaller value %d", d, b, prev)
		}
		if lo, hi := binLow(b), binLow(b+1); float64(d) < lo || float64(d) >= hi {
			t.Fatalf("bin(%d) = %d covers [%v, %v)", d, b, lo, hi)
		}
		prev = b
	}
}
