package timeline

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestFromJSON: a timeline rebuilt from its JSON has the same JSON, and
// timelines merged through their JSON equal the timeline of every
// statement, widths and wall-time alignment included.
func TestFromJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	base := int64(1_700_000_000) * sec
	for _, spread := range []int64{10 * sec, int64(3*MaxBuckets) * sec} {
		whole, a, b := New(), New(), New()
		for i := range 20000 {
			at := base + r.Int64N(spread)
			if i%2 == 0 {
				// the second part starts later: the timelines
				// overlap only partly
				at += spread / 3
			}
			d := int64(r.ExpFloat64() * 3000)
			if r.IntN(20) == 0 {
				d = -1
			}
			if r.IntN(50) == 0 {
				d = r.Int64N(1 << 40)
			}
			failed := r.IntN(11) == 0
			whole.Add(at, d, failed)
			if i%2 == 0 {
				a.Add(at, d, failed)
			} else {
				b.Add(at, d, failed)
			}
		}
		ra, err := FromJSON(roundTrip(t, a.JSON()))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := ra.JSON(), a.JSON(); !reflect.DeepEqual(got, want) {
			t.Fatalf("spread %d: round trip changed the timeline:\n%+v\nwant\n%+v", spread, got, want)
		}
		rb, err := FromJSON(roundTrip(t, b.JSON()))
		if err != nil {
			t.Fatal(err)
		}
		ra.Merge(rb)
		if got, want := ra.JSON(), whole.JSON(); !reflect.DeepEqual(got, want) {
			t.Fatalf("spread %d: merged through JSON:\n%+v\nwant\n%+v", spread, got, want)
		}
	}
}

func roundTrip(t *testing.T, j *JSON) *JSON {
	t.Helper()
	data, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	var back JSON
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	return &back
}

func TestFromJSONRefuses(t *testing.T) {
	good := func() *JSON {
		return &JSON{Start: "2023-11-14T22:13:20.000000Z", BucketMS: 1000, Calls: []int64{2}, Errors: []int64{0}, P95MS: []float64{1}, Bins: [][]int64{{80, 2}}}
	}
	if _, err := FromJSON(good()); err != nil {
		t.Fatalf("good timeline refused: %v", err)
	}
	old := good()
	old.Bins = nil
	if _, err := FromJSON(old); !errors.Is(err, ErrNoBins) {
		t.Errorf("timeline without bins: %v, want ErrNoBins", err)
	}
	for name, mutate := range map[string]func(*JSON){
		"odd bins":         func(j *JSON) { j.Bins[0] = []int64{80} },
		"bin out of range": func(j *JSON) { j.Bins[0] = []int64{numBins, 2} },
		"zero count":       func(j *JSON) { j.Bins[0] = []int64{80, 0} },
		"width":            func(j *JSON) { j.BucketMS = 1500 },
		"start":            func(j *JSON) { j.Start = "2023-11-14T22:13:20.5Z" },
		"lengths":          func(j *JSON) { j.Errors = nil },
	} {
		j := good()
		mutate(j)
		if _, err := FromJSON(j); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
