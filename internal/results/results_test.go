package results

import (
	"bytes"
	"encoding/json"
	"maps"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/timeline"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		json, wantErr string
		want          LatencySource
	}{
		{`{"kind":"analysis","queries":[]}`, "", LatencyServerLog},
		{`{"kind":"replay","queries":[]}`, "", LatencyClient},
		{`{"kind":"replay","latency_source":"server_log"}`, "", LatencyServerLog},
		{`{"kind":"replay","latency_source":"pg_stat_statements"}`, "", LatencyPgStatStatements},
		{`{"version":2,"kind":"analysis","latency_source":"server_log"}`, "", LatencyServerLog},
		{`{"kind":"replay","latency_source":"wall"}`, "unknown latency_source", ""},
		{`{"kind":"report"}`, "not a result of analyze or replay", ""},
		{`{"queries":[]}`, "no \"kind\"", ""},
		{`[1,2]`, "not a pgrehearse result", ""},
		{`{"kind":"analysis","timeline":{"bucket_ms":0}}`, "bucket_ms", ""},
		{`{"version":3,"kind":"analysis","latency_source":"server_log","incomplete":["a","b"],"incomplete_reasons":["lost"]}`, "", LatencyServerLog},
		{`{"version":3,"kind":"analysis","latency_source":"server_log","incomplete_reasons":["lost"]}`, "1 incomplete_reasons for 0", ""},
		{`{"version":3,"kind":"analysis","latency_source":"server_log","part":{"shards":[1,0],"of":2}}`, "ascending", ""},
		{`{"version":3,"kind":"analysis","latency_source":"server_log","part":{"shards":[2],"of":2}}`, "distinct shards of 2", ""},
		{`{"version":3,"kind":"analysis","latency_source":"server_log","events":{"connect":1,"statement":2}}`, "", LatencyServerLog},
		{`{"version":3,"kind":"analysis","latency_source":"server_log","events":{"commit":1}}`, "unknown event kind", ""},
		{`{"version":4,"kind":"analysis"}`, "written by a newer pgrehearse (results version 4)", ""},
		{`{"version":1,"kind":"analysis"}`, "does not exist", ""},
		{`{"version":2,"kind":"replay","latency_source":"client","statements":{"total":3,"executed":1}}`, "do not add up", ""},
		{`{"version":2,"kind":"analysis","latency_source":"server_log","speed":1}`, "replay's fields", ""},
	}
	for _, tt := range tests {
		r, err := Decode([]byte(tt.json), "x.json")
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err %v, want %q", tt.json, err, tt.wantErr)
			}
			continue
		}
		if err != nil || r.LatencySource != tt.want {
			t.Errorf("%s: %v, %v; want %s", tt.json, r, err, tt.want)
			continue
		}
		if (r.Kind == KindReplay) != (r.Replay != nil) {
			t.Errorf("%s: kind %s with Replay %v", tt.json, r.Kind, r.Replay)
		}
	}
}

// TestVersion1Files: files written before versions existed are read, with
// what they left implicit filled in; those without histograms can be
// compared but not merged, and say why.
func TestVersion1Files(t *testing.T) {
	read := func(name string) *Result {
		t.Helper()
		r, err := ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if r.Version != 1 {
			t.Errorf("%s: version %d, want 1", name, r.Version)
		}
		if err := r.Statements.Check(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		return r
	}
	a := read("v1-analysis.json")
	if a.Kind != KindAnalysis || a.LatencySource != LatencyServerLog || a.Sessions.Total != 2 || a.Replay != nil {
		t.Errorf("analysis: kind %s, source %s, sessions %+v, replay %v", a.Kind, a.LatencySource, a.Sessions, a.Replay)
	}
	if a.Statements.Total != 8 || a.Statements.Executed != 6 || a.Lines == nil || a.Lines.Total == 0 || a.FirstTime == 0 {
		t.Errorf("analysis: statements %+v, lines %+v, first %v", a.Statements, a.Lines, a.FirstTime)
	}
	if a.HasHist() {
		t.Error("an analysis without --hist claims histograms")
	}
	if _, err := Merge(a, a); err == nil || !strings.Contains(err.Error(), "results version 1") {
		t.Errorf("merging a version 1 file without histograms: %v", err)
	}
	h := read("v1-analysis-hist.json")
	if !h.HasHist() {
		t.Error("analyze --hist result has no histograms")
	}
	// Its queries have histograms but its timeline no latency bins.
	if _, err := Merge(h, h); err == nil || !strings.Contains(err.Error(), "results version 1") {
		t.Errorf("merging a version 1 file with histograms: %v", err)
	}
	h.Timeline = nil
	m, err := Merge(h, h)
	if err != nil {
		t.Fatalf("merging a version 1 file with histograms, without its timeline: %v", err)
	}
	if m.Version != Version || m.Statements.Total != 2*h.Statements.Total || m.Sessions.Total != 2*h.Sessions.Total {
		t.Errorf("self merge: version %d, statements %+v, sessions %+v", m.Version, m.Statements, m.Sessions)
	}
	r := read("v1-replay-dryrun.json")
	if r.Kind != KindReplay || r.LatencySource != LatencyClient || r.Replay == nil || !r.DryRun || r.Speed != 100 {
		t.Fatalf("replay: %+v", r)
	}
	if r.Lag == nil || r.Lag.Max == 0 || r.Lag.Hist != "" {
		t.Errorf("replay lag %+v: want version 1's p50/p99/max without a histogram", r.Lag)
	}
}

// rnd builds random results of a workload whose sessions are dealt to
// parts: the whole and each part are built from the same calls.
type call struct {
	session     int
	fp          string
	at, d, rows int64
	code        string
}

func calls(n int, seed uint64) []call {
	r := rand.New(rand.NewPCG(seed, 1))
	fps := []string{"a", "b", "c", "d"}
	out := make([]call, n)
	base := int64(1_700_000_000_000_000)
	for i := range out {
		c := call{session: r.IntN(40), fp: fps[r.IntN(len(fps))], at: base + r.Int64N(3600e6),
			d: int64(r.ExpFloat64() * 2000), rows: -1}
		if r.IntN(5) == 0 {
			c.rows = r.Int64N(10)
		}
		if r.IntN(20) == 0 {
			c.code = []string{"23505", "40001", "57014"}[r.IntN(3)]
		}
		out[i] = c
	}
	return out
}

func build(t *testing.T, cs []call, keep func(call) bool, replay bool) *Result {
	t.Helper()
	kind, src := KindAnalysis, LatencyServerLog
	if replay {
		kind, src = KindReplay, LatencyClient
	}
	res := New(kind, src)
	res.Lines = &LineCounts{Skipped: map[LineSkip]int64{}}
	set := querystats.NewSet()
	tl := timeline.New()
	lag, wait := NewRecorder(), NewRecorder()
	sessions := map[int]bool{}
	for _, c := range cs {
		if !keep(c) {
			continue
		}
		sessions[c.session] = true
		st := set.Slot(c.fp, "SELECT "+c.fp)
		st.Record("SELECT "+c.fp, c.at, c.d, c.code != "")
		tl.Add(c.at, c.d, c.code != "")
		res.Lines.Total += 2
		res.Lines.Parsed++
		res.Lines.Skipped["noise"]++
		res.Statements.Total++
		if c.code != "" {
			st.RecordError(c.code)
			res.Statements.Failed++
			res.ErrorsBySQLState[c.code]++
		} else {
			res.Statements.Executed++
		}
		if !replay && c.d%5 == 0 {
			// An error outside any statement (a Parse never
			// executed), as an analysis counts it.
			res.ErrorsBySQLState["42601"]++
			res.ErrorsOutsideStatements++
		}
		if c.rows >= 0 {
			st.RecordRows(c.rows)
		}
		if res.FirstTime == 0 || Time(c.at) < res.FirstTime {
			res.FirstTime = Time(c.at)
		}
		res.LastTime = max(res.LastTime, Time(c.at))
		lag.Record(c.d / 7)
		if c.d%3 == 0 {
			wait.Record(c.d)
		}
	}
	res.Sessions.Total = int64(len(sessions))
	var err error
	if res.Queries, err = set.Rows(querystats.RowOptions{Hist: true}); err != nil {
		t.Fatal(err)
	}
	res.Timeline = tl.JSON()
	if replay {
		res.Speed = 1
		if res.Lag, err = lag.Distribution(); err != nil {
			t.Fatal(err)
		}
		if res.SyncWait, err = wait.Distribution(); err != nil {
			t.Fatal(err)
		}
		res.Outcomes = Outcomes{Ran: res.Statements.Total, FailedOnlyOnTarget: res.Statements.Failed}
		res.Outcomes.SetRates()
	}
	return res
}

// roundTrip writes r and reads it back, as a file passes between
// machines.
func roundTrip(t *testing.T, r *Result) *Result {
	t.Helper()
	var b bytes.Buffer
	if err := Encode(&b, r); err != nil {
		t.Fatal(err)
	}
	back, err := Decode(b.Bytes(), r.Name())
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	return back
}

func jsonOf(t *testing.T, r *Result) string {
	t.Helper()
	c := *r
	c.Source, c.Files = "", nil
	b, err := json.MarshalIndent(&c, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMergeIsExact: the results of parts of a workload split by session,
// merged after a trip through their JSON, equal the result of the whole,
// per-query histograms, codes and rows, the timeline, the accounting and a
// replay's lag and sync waits included; in any order of merging.
func TestMergeIsExact(t *testing.T) {
	cs := calls(20000, 3)
	for _, replay := range []bool{false, true} {
		whole := build(t, cs, func(call) bool { return true }, replay)
		parts := make([]*Result, 3)
		for i := range parts {
			parts[i] = roundTrip(t, build(t, cs, func(c call) bool { return c.session%3 == i }, replay))
		}
		for _, order := range [][]int{{0, 1, 2}, {2, 0, 1}} {
			m, err := MergeAll(parts[order[0]], parts[order[1]], parts[order[2]])
			if err != nil {
				t.Fatal(err)
			}
			if got, want := jsonOf(t, m), jsonOf(t, roundTrip(t, whole)); got != want {
				t.Fatalf("replay %v, order %v: merged parts differ from the whole:\n%s\nwant\n%s", replay, order, got, want)
			}
		}
	}
}

func TestMergeRefuses(t *testing.T) {
	cs := calls(100, 4)
	a := build(t, cs, func(call) bool { return true }, false)
	r := build(t, cs, func(call) bool { return true }, true)
	fast := build(t, cs, func(call) bool { return true }, true)
	fast.Speed = 0
	server := build(t, cs, func(call) bool { return true }, true)
	server.LatencySource = LatencyServerLog
	pooled := build(t, cs, func(call) bool { return true }, true)
	pooled.Pooled = true
	dry := build(t, cs, func(call) bool { return true }, true)
	dry.DryRun = true
	for _, tc := range []struct {
		a, b *Result
		want string
	}{
		{a, r, "different kinds"},
		{r, fast, "different speeds"},
		{r, server, "different places"},
		{r, pooled, "only one replayed its sessions as a pool"},
		{r, dry, "only one is a dry run"},
	} {
		if _, err := Merge(tc.a, tc.b); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("merge: %v, want %q", err, tc.want)
		}
	}
}

func TestEncodeHasNoNulls(t *testing.T) {
	for _, k := range []Kind{KindAnalysis, KindReplay} {
		var b bytes.Buffer
		if err := Encode(&b, New(k, LatencyClient)); err != nil {
			t.Fatal(err)
		}
		s := b.String()
		// lag_ms is null at speed 0 on purpose: no schedule.
		s = strings.Replace(s, `"lag_ms": null`, "", 1)
		if strings.Contains(s, "null") {
			t.Errorf("%s: empty result has nulls:\n%s", k, b.String())
		}
		if !strings.Contains(s, `"version": 3`) {
			t.Errorf("%s: no version:\n%s", k, s)
		}
	}
}

func TestDistribution(t *testing.T) {
	r := NewRecorder()
	for v := range int64(1000) {
		r.Record(v * 1000)
	}
	d, err := r.Distribution()
	if err != nil {
		t.Fatal(err)
	}
	if d.Count != 1000 || d.Max != 999 || d.P50 < 499 || d.P50 > 500.5 || d.P99 < 989 || d.P99 > 990.5 {
		t.Errorf("distribution %+v", d)
	}
	back, err := d.Recorder()
	if err != nil {
		t.Fatal(err)
	}
	d2, _ := back.Distribution()
	if !reflect.DeepEqual(d, d2) {
		t.Errorf("round trip %+v, want %+v", d2, d)
	}
	old := *d
	old.Hist = ""
	if _, err := old.Recorder(); err == nil {
		t.Error("a distribution without histogram was merged")
	}
}

// TestOutcomesCheck: a replay whose outcomes add up passes, one where
// more were answered than executed among them (TestAnswersCostPgbench's
// 30,330 executed of 30,331 compared: one failed, and a failed execution
// is compared too); each rule broken alone is named.
func TestOutcomesCheck(t *testing.T) {
	s := StatementCounts{Total: 30332, Executed: 30330, Failed: 1, Skipped: map[SkipReason]int64{SkipInterrupted: 1}}
	ok := Outcomes{Ran: 30331, OriginalFailed: 1, FailedOnlyInOriginal: 1, FailedOnlyOnTarget: 1, OnlyOnTargetBySQLState: map[string]int64{"23505": 1},
		Answered: 30331, AnswerDiffers: 579, AnswerDiffersExplained: map[string]int64{string(querystats.CauseRaced): 133}, AnswerDiffersUnexplained: 446}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	if err := ok.Check(s); err != nil {
		t.Fatalf("%+v: %v", ok, err)
	}
	for _, tc := range []struct {
		name   string
		change func(o *Outcomes, s *StatementCounts)
		want   string
	}{
		{"a failure counted in no outcome", func(o *Outcomes, s *StatementCounts) { s.Failed++; s.Executed-- }, "failed only on the target != 2 statements failed"},
		{"an original failure in neither", func(o *Outcomes, s *StatementCounts) { o.OriginalFailed++ }, "!= 2 failed in the original"},
		{"more ran than executed or failed", func(o *Outcomes, s *StatementCounts) { o.Ran++; o.Answered++ }, "30332 executions ran"},
		{"fewer ran than failed", func(o *Outcomes, s *StatementCounts) {
			o.Ran = 0
			o.Answered, o.AnswerDiffers = 0, 0
			o.AnswerDiffersExplained, o.AnswerDiffersUnexplained = nil, 0
		}, "0 executions ran"},
		{"answered and not ran", func(o *Outcomes, s *StatementCounts) { o.Answered++ }, "of 30332 compared of 30331"},
		{"more differ than compared", func(o *Outcomes, s *StatementCounts) {
			o.AnswerDiffers = o.Answered + 1
			o.AnswerDiffersUnexplained += o.Answered + 1 - 579
		}, "30332 answers differ of 30331"},
		{"a differing answer in no cause", func(o *Outcomes, s *StatementCounts) { o.AnswerDiffers++ }, "suspect != 580 answers differ"},
		{"a suspect answer counted apart", func(o *Outcomes, s *StatementCounts) { o.AnswerDiffersSuspect++ }, "1 suspect != 579 answers differ"},
		{"a failure by SQLSTATE too many", func(o *Outcomes, s *StatementCounts) { o.OnlyOnTargetBySQLState = map[string]int64{"23505": 2} }, "2 failed only on the target by SQLSTATE"},
	} {
		o, st := ok, s
		o.AnswerDiffersExplained = maps.Clone(ok.AnswerDiffersExplained)
		tc.change(&o, &st)
		err := o.Check(st)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
}
