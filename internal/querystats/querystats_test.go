package querystats

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

func TestPercentiles(t *testing.T) {
	uniform := make([]int64, 0, 10000)
	for v := int64(1); v <= 10000; v++ {
		uniform = append(uniform, v)
	}
	bimodal := make([]int64, 0, 100)
	for i := range 100 {
		if i < 90 {
			bimodal = append(bimodal, 1000)
		} else {
			bimodal = append(bimodal, 100_000)
		}
	}
	tests := []struct {
		name          string
		durations     []int64
		p50, p95, p99 int64
		mean          float64
	}{
		{"uniform 1..10000 µs", uniform, 5000, 9500, 9900, 5000.5},
		{"constant", []int64{250, 250, 250, 250}, 250, 250, 250, 250},
		{"single", []int64{7}, 7, 7, 7, 7},
		{"bimodal 90% fast", bimodal, 1000, 100_000, 100_000, 10_900},
		{"zero durations", []int64{0, 0, 0}, 0, 0, 0, 0},
		{"beyond the histogram", []int64{2 * histHighest}, 2 * histHighest, 2 * histHighest, 2 * histHighest, 2 * histHighest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSet()
			// Order must not matter: add in a shuffled order.
			d := append([]int64(nil), tt.durations...)
			rand.New(rand.NewPCG(1, 2)).Shuffle(len(d), func(i, j int) { d[i], d[j] = d[j], d[i] })
			for _, v := range d {
				s.Add("fp", "q", v, false)
			}
			st := s.Get("fp")
			for _, c := range []struct {
				p    float64
				want int64
			}{{50, tt.p50}, {95, tt.p95}, {99, tt.p99}} {
				got := st.PercentileUS(c.p)
				// HDR with 3 significant digits: within 0.1%.
				if math.Abs(float64(got-c.want)) > float64(c.want)/1000+1 {
					t.Errorf("p%v = %d µs, want %d ±0.1%%", c.p, got, c.want)
				}
			}
			if st.MeanUS() != tt.mean {
				t.Errorf("mean = %v, want %v", st.MeanUS(), tt.mean)
			}
			if st.TimedCalls != int64(len(d)) || st.Calls != int64(len(d)) {
				t.Errorf("calls %d timed %d, want %d", st.Calls, st.TimedCalls, len(d))
			}
		})
	}
}

func TestNoDurations(t *testing.T) {
	s := NewSet()
	s.Add("a", "SELECT $1", NoDuration, false)
	s.Add("a", "SELECT $1", NoDuration, true)
	rows, err := s.Rows(RowOptions{Hist: true})
	if err != nil {
		t.Fatal(err)
	}
	want := Row{Fingerprint: "a", Query: "SELECT $1", Calls: 2, Errors: 1}
	if !reflect.DeepEqual(rows, []Row{want}) {
		t.Errorf("rows = %+v, want %+v", rows, want)
	}
	b, _ := json.Marshal(rows[0])
	var m map[string]any
	json.Unmarshal(b, &m)
	if m["timed_calls"] != 0.0 {
		t.Errorf("timed_calls missing from JSON: %s", b)
	}
}

type call struct {
	fp, query string
	at, d     int64
	failed    bool
}

func randomCalls(n int) []call {
	r := rand.New(rand.NewPCG(3, 4))
	fps := []string{"aa", "bb", "cc", "dd", "ee"}
	calls := make([]call, n)
	for i := range calls {
		c := call{fp: fps[r.IntN(len(fps))], at: 1_700_000_000_000_000 + r.Int64N(1_000_000), d: r.Int64N(50_000)}
		c.query = "text of " + c.fp + string(rune('a'+r.IntN(3))) // same fingerprint, several texts
		if r.IntN(10) == 0 {
			c.d = NoDuration
		}
		if r.IntN(20) == 0 {
			c.at = NoTime
		}
		c.failed = r.IntN(15) == 0
		calls[i] = c
	}
	return calls
}

// roundTrip is s read back from its rows' JSON (FromRows); it fails t
// when the rows of what it read differ from s's.
func roundTrip(t *testing.T, s *Set) *Set {
	t.Helper()
	before := rowsJSON(t, s)
	var rows []Row
	if err := json.Unmarshal([]byte(before), &rows); err != nil {
		t.Fatal(err)
	}
	back, err := FromRows(rows)
	if err != nil {
		t.Fatal(err)
	}
	if after := rowsJSON(t, back); after != before {
		t.Errorf("round trip changed the rows:\n%s\nwant\n%s", after, before)
	}
	return back
}

func rowsJSON(t *testing.T, s *Set) string {
	t.Helper()
	rows, err := s.Rows(RowOptions{Hist: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(rows, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMergeEqualsOneSet(t *testing.T) {
	calls := randomCalls(5000)
	one := NewSet()
	for _, c := range calls {
		one.AddAt(c.fp, c.query, c.at, c.d, c.failed)
	}
	for _, parts := range []int{2, 3, 7} {
		sets := make([]*Set, parts)
		for i := range sets {
			sets[i] = NewSet()
		}
		// Deal calls round-robin in reverse order, then merge in reverse:
		// neither the split nor the order may show in the result.
		for i := len(calls) - 1; i >= 0; i-- {
			c := calls[i]
			sets[i%parts].AddAt(c.fp, c.query, c.at, c.d, c.failed)
		}
		merged := NewSet()
		for i := parts - 1; i >= 0; i-- {
			merged.Merge(sets[i])
		}
		if got, want := rowsJSON(t, merged), rowsJSON(t, one); got != want {
			t.Errorf("%d parts merged differ from one set:\n%s\nwant\n%s", parts, got, want)
		}
	}
}

func TestMergeDoesNotShare(t *testing.T) {
	a, b := NewSet(), NewSet()
	b.Add("x", "q", 10, false)
	a.Merge(b)
	b.Add("x", "q", 20, false)
	if st := a.Get("x"); st.Calls != 1 || st.hist.TotalCount() != 1 {
		t.Errorf("a changed with b: calls %d, hist %d", st.Calls, st.hist.TotalCount())
	}
}

func TestJSONRoundTrip(t *testing.T) {
	s := NewSet()
	for _, c := range randomCalls(2000) {
		s.AddAt(c.fp, c.query, c.at, c.d, c.failed)
	}
	s.Add("untimed", "SELECT $1", NoDuration, false)
	back := roundTrip(t, s)
	// Merging a result with itself doubles counts and keeps percentiles.
	back.Merge(back)
	st := back.Get("aa")
	if st.Calls != s.Get("aa").Calls*2 || st.PercentileUS(95) != s.Get("aa").PercentileUS(95) {
		t.Errorf("self merge: calls %d p95 %d", st.Calls, st.PercentileUS(95))
	}
}

func TestFromRowsNeedsHist(t *testing.T) {
	if _, err := FromRows([]Row{{Fingerprint: "a", Calls: 1, Latency: Latency{TimedCalls: 1, TotalMS: 1}}}); err == nil {
		t.Error("a timed row without hist was accepted")
	}
}

func TestSorted(t *testing.T) {
	s := NewSet()
	s.Add("slow", "q", 1000, false)
	s.Add("many", "q", 300, false)
	s.Add("many", "q", 300, false)
	s.Add("tie-b", "q", 300, false)
	s.Add("tie-a", "q", 300, false)
	s.Add("untimed", "q", NoDuration, false)
	var got []string
	for _, st := range s.Sorted() {
		got = append(got, st.Fingerprint)
	}
	want := []string{"slow", "many", "tie-a", "tie-b", "untimed"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

func TestQueryTextIsEarliest(t *testing.T) {
	s := NewSet()
	s.AddAt("f", "later", 200, 1, false)
	s.AddAt("f", "earliest", 100, 1, false)
	s.AddAt("f", "untimed", NoTime, 1, false)
	s.AddAt("f", "also earliest, sorts first", 100, 1, false)
	if q := s.Get("f").Query; q != "also earliest, sorts first" {
		t.Errorf("query = %q", q)
	}
}

func TestSplitDuration(t *testing.T) {
	tests := []struct {
		d    int64
		k    int
		want []int64
	}{
		{10, 3, []int64{4, 3, 3}},
		{9, 3, []int64{3, 3, 3}},
		{1, 3, []int64{1, 0, 0}},
		{7, 1, []int64{7}},
		{NoDuration, 3, []int64{NoDuration, NoDuration, NoDuration}},
	}
	for _, tt := range tests {
		var got []int64
		for i := range tt.k {
			got = append(got, SplitDuration(tt.d, tt.k, i))
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("SplitDuration(%d, %d) = %v, want %v", tt.d, tt.k, got, tt.want)
		}
	}
}

func BenchmarkAdd(b *testing.B) {
	s := NewSet()
	r := rand.New(rand.NewPCG(5, 6))
	d := make([]int64, 4096)
	for i := range d {
		d[i] = int64(r.ExpFloat64() * 2000)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s.AddAt("0123456789abcdef", "SELECT $1", int64(i), d[i%len(d)], false)
		i++
	}
}

// TestCodesAndRows: errors by SQLSTATE and row counts add up in Merge and
// survive the JSON round trip.
func TestCodesAndRows(t *testing.T) {
	a, b := NewSet(), NewSet()
	st := a.Slot("x", "q")
	st.Record("q", 1, 10, true)
	st.RecordError("23505")
	st.Record("q", 2, 10, false)
	st.RecordRows(3)
	st = b.Slot("x", "q")
	st.Record("q", 3, 10, true)
	st.RecordError("23505")
	st.Record("q", 4, 10, true)
	st.RecordError("40001")
	st.RecordRows(0)
	a.Merge(b)
	got := a.Get("x")
	if !reflect.DeepEqual(got.ErrorsBySQLState(), map[string]int64{"23505": 2, "40001": 1}) || got.RowsCalls != 2 || got.Rows != 3 {
		t.Fatalf("merged codes %v, rows %d of %d calls", got.ErrorsBySQLState(), got.Rows, got.RowsCalls)
	}
	roundTrip(t, a)
	b.Slot("x", "q").RecordError("57014")
	if a.Get("x").ErrorsBySQLState()["57014"] != 0 {
		t.Error("a merged set shares its codes with the other")
	}
}
