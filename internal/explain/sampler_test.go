package explain

import (
	"context"
	"math"
	"strconv"
	"sync"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/catalog"
	"github.com/pgrehearse/pgrehearse/internal/plan"
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

func TestForFindings(t *testing.T) {
	p, err := plan.ParseText("Seq Scan on customers  (cost=0.00..1141.00 rows=1 width=22)\n  Filter: (email = $1)")
	if err != nil {
		t.Fatal(err)
	}
	rep := &Report{Outcomes: []Outcome{{Query: "SELECT * FROM customers WHERE email = $1",
		Explained: []Explained{{Candidate: &SidePlan{Mode: ModeGeneric, Plan: p}}}}}}
	f := rep.ForFindings(Candidate, nil)
	cp, err := f.Explain(context.Background(), catalog.Request{Query: "SELECT * FROM customers WHERE email = $1", Generic: true})
	if err != nil || cp.Mode != "generic" || cp.Root.NodeType != "Seq Scan" || cp.Root.Relation != "customers" || cp.Root.Filter != "(email = $1)" || cp.Root.TotalCost != 1141 {
		t.Errorf("plan %+v, %v", cp, err)
	}
	if _, err := f.Explain(context.Background(), catalog.Request{Query: "SELECT 1"}); err == nil {
		t.Error("a statement not explained, without a connection")
	}
}
