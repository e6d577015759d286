package results

import (
	"math"
	"strconv"
	"sync"
	"testing"
)

func TestSampler(t *testing.T) {
	s := NewSampler(0)
	// 10,000 executions of durations 1..10,000 ms in a shuffled order:
	// the slowest is 10,000, the median near 5,000.
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 10000; i += 4 {
				d := float64((i*7919)%10000 + 1)
				v := strconv.Itoa(int(d))
				s.Add("fp", "shop", "SELECT $1", []*string{&v, nil}, d)
			}
		}()
	}
	wg.Wait()
	got := s.Samples("fp")
	if len(got) != 2 || got[0].Role != SampleSlowest || got[1].Role != SampleMedian {
		t.Fatalf("samples: %+v", got)
	}
	if got[0].DurationMS != 10000 || *got[0].Params[0] != "10000" || got[0].Params[1] != nil || got[0].Database != "shop" {
		t.Errorf("slowest: %+v", got[0])
	}
	// The median of 31 uniform draws is within 2,500 of 5,000 far more
	// often than one time in a million.
	if med := got[1].DurationMS; math.Abs(med-5000) > 2500 || *got[1].Params[0] != strconv.Itoa(int(med)) {
		t.Errorf("median: %+v", got[1])
	}
	if s.Samples("other") != nil || len(s.Fingerprints()) != 1 {
		t.Error("unknown fingerprint")
	}
	// A value kept is a copy: the caller's buffer may be reused.
	buf := []byte("secret")
	v := string(buf)
	one := NewSampler(3)
	one.Add("x", "shop", "SELECT $1", []*string{&v}, 1)
	v = "changed"
	if got := one.Samples("x"); len(got) != 1 || *got[0].Params[0] != "secret" {
		t.Errorf("one execution: %+v", got)
	}
}

// TestSamplerMerge: two workers' samplers merged keep the slowest of
// both and a median drawn from both in proportion to what each saw.
func TestSamplerMerge(t *testing.T) {
	a, b := NewSampler(0), NewSampler(0)
	for i := 1; i <= 9000; i++ {
		v := strconv.Itoa(i)
		a.Add("fp", "shop", "SELECT $1", []*string{&v}, float64(i%1000+1))
	}
	for i := 1; i <= 1000; i++ {
		v := strconv.Itoa(i)
		b.Add("fp", "shop", "SELECT $1", []*string{&v}, 5000+float64(i))
	}
	b.Add("only-b", "shop", "SELECT 1", nil, 1)
	a.Merge(b)
	got := a.Samples("fp")
	if len(got) != 2 || got[0].DurationMS != 6000 {
		t.Fatalf("merged: %+v", got)
	}
	// Nine in ten executions were a's (at most 1,000 ms): the median
	// is one of them.
	if got[1].DurationMS > 1000 {
		t.Errorf("median %v drawn from the smaller side", got[1].DurationMS)
	}
	if len(a.Result()) != 2 {
		t.Errorf("fingerprints after merge: %v", a.Fingerprints())
	}
}
