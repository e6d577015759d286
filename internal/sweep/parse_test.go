package sweep

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The testdata/pgbench files are pgbench 15's real output, standard
// output and standard error apart, as the driver reads them.
func TestParseSummary(t *testing.T) {
	functionalCase(t)
	tests := []struct {
		file string
		want Summary
	}{
		{"select-only-prepared", Summary{TransactionType: "<builtin: select only>", Mode: "prepared", Clients: 4, Threads: 2,
			Transactions: 200312, LatencyAvgMS: 0.053, ConnectMS: 8.289, TPS: 66779.325719}},
		{"tpcb-like-extended", Summary{TransactionType: "<builtin: TPC-B (sort of)>", Mode: "extended", Clients: 2, Threads: 2,
			Transactions: 3008, LatencyAvgMS: 1.325, ConnectMS: 9.371, TPS: 1507.015538}},
		{"custom-simple", Summary{TransactionType: "/tmp/swcap/custom.sql", Mode: "simple", Clients: 1, Threads: 1,
			Transactions: 41918, LatencyAvgMS: 0.047, ConnectMS: 8.206, TPS: 21044.134044}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := ParseSummary(readTestdata(t, tt.file+".stdout"))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseSummaryOlderAndAborted(t *testing.T) {
	functionalCase(t)
	// pgbench 13 and older print two tps lines; the one excluding
	// connections is the one to keep.
	old := "number of transactions actually processed: 1000/1000\nlatency average = 1.500 ms\n" +
		"tps = 650.1 (including connections establishing)\ntps = 666.6 (excluding connections establishing)\n"
	s, err := ParseSummary([]byte(old))
	if err != nil || s.TPS != 666.6 || s.Transactions != 1000 || s.LatencyAvgMS != 1.5 {
		t.Errorf("older summary: %+v, %v", s, err)
	}
	// An aborted run prints its header and no tps line.
	if _, err := ParseSummary(readTestdata(t, "failing.stdout")); err == nil {
		t.Error("an aborted run's summary parsed without error")
	}
}

func TestParseProgress(t *testing.T) {
	functionalCase(t)
	tests := []struct {
		line string
		ok   bool
		want Progress
	}{
		{"progress: 2.0 s, 82869.9 tps, lat 0.045 ms stddev 0.049, 0 failed", true,
			Progress{At: 2, TPS: 82869.9, LatMS: 0.045, StdDev: 0.049, HasFail: true}},
		{"progress: 5.0 s, 10.0 tps, lat 1.000 ms stddev 0.100, 3 failed", true,
			Progress{At: 5, TPS: 10, LatMS: 1, StdDev: 0.1, Failed: 3, HasFail: true}},
		// pgbench 14 and older: no failures.
		{"progress: 1.0 s, 1355.9 tps, lat 1.463 ms stddev 1.480", true,
			Progress{At: 1, TPS: 1355.9, LatMS: 1.463, StdDev: 1.48}},
		// Under --rate, a lag and maybe skipped transactions come first.
		{"progress: 3.0 s, 99.0 tps, lat 0.200 ms stddev 0.010, lag 0.005 ms, 0 skipped, 2 failed", true,
			Progress{At: 3, TPS: 99, LatMS: 0.2, StdDev: 0.01, Failed: 2, HasFail: true}},
		{"starting vacuum...end.", false, Progress{}},
		{"pgbench: error: client 0 script 0 aborted in command 0 query 0: ERROR:  division by zero", false, Progress{}},
	}
	for _, tt := range tests {
		got, ok := ParseProgress(tt.line)
		if ok != tt.ok || got != tt.want {
			t.Errorf("ParseProgress(%q) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
	// A second without transactions reports NaN latencies.
	p, ok := ParseProgress("progress: 4.0 s, 0.0 tps, lat NaN ms stddev NaN, 0 failed")
	if !ok || p.TPS != 0 || !math.IsNaN(p.LatMS) {
		t.Errorf("NaN line: %+v, %v", p, ok)
	}
}

func TestProgressTestdata(t *testing.T) {
	functionalCase(t)
	var reports []Progress
	var other []string
	for _, line := range strings.Split(strings.TrimSpace(string(readTestdata(t, "select-only-prepared.stderr"))), "\n") {
		if p, ok := ParseProgress(line); ok {
			reports = append(reports, p)
		} else {
			other = append(other, line)
		}
	}
	if len(reports) != 2 || len(other) != 1 || other[0] != "starting vacuum...end." {
		t.Fatalf("reports %v, other lines %q", reports, other)
	}
	// A one-second warm-up leaves the second interval in the window.
	tps, tx, _, mean, span := windowStats(reports, 1, 3)
	if tps != 63084.5 || tx != 63085 || math.Abs(mean-0.057) > 1e-9 || span != 1 {
		t.Errorf("window (1, 3]: tps %v, tx %v, mean %v, span %v", tps, tx, mean, span)
	}
}

func TestWindowStats(t *testing.T) {
	functionalCase(t)
	reports := []Progress{
		{At: 1, TPS: 100, LatMS: 10}, // warm-up
		{At: 2, TPS: 200, LatMS: 1},
		{At: 3, TPS: 0, LatMS: math.NaN()},
		{At: 4, TPS: 600, LatMS: 2, Failed: 1},
		{At: 5, TPS: 1000, LatMS: 50}, // tail
	}
	tps, tx, failed, mean, span := windowStats(reports, 1, 4)
	if tx != 800 || failed != 1 || span != 3 || math.Abs(tps-800.0/3) > 1e-9 {
		t.Errorf("tps %v tx %v failed %v span %v", tps, tx, failed, span)
	}
	if want := (200*1.0 + 600*2.0) / 800; math.Abs(mean-want) > 1e-9 {
		t.Errorf("mean %v, want %v weighted by transactions", mean, want)
	}
	if tps, _, _, _, span := windowStats(nil, 1, 4); tps != 0 || span != 0 {
		t.Errorf("no reports: tps %v span %v", tps, span)
	}
}

func TestParseTxLine(t *testing.T) {
	functionalCase(t)
	tests := []struct {
		line    string
		want    TxRecord
		wantErr bool
	}{
		{"0 1 2509 0 1795336816 471363", TxRecord{LatencyUS: 2509, EndUS: 1795336816471363}, false},
		// With --rate: schedule lag; pgbench 15 adds retries.
		{"3 12 870 0 1795336816 5 120 0", TxRecord{LatencyUS: 870, EndUS: 1795336816000005}, false},
		{"1 7 failed 0 1795336816 472001", TxRecord{Failed: true, EndUS: 1795336816472001}, false},
		{"1 8 skipped 0 1795336816 472001 9000", TxRecord{Skipped: true, EndUS: 1795336816472001}, false},
		{"0 1 2509 0", TxRecord{}, true},
		{"0 1 abc 0 1795336816 471363", TxRecord{}, true},
	}
	for _, tt := range tests {
		got, err := ParseTxLine(tt.line)
		if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
			t.Errorf("ParseTxLine(%q) = %+v, %v; want %+v, error %v", tt.line, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestLatenciesFromLogs(t *testing.T) {
	functionalCase(t)
	dir := t.TempDir()
	// One log per pgbench thread, as pgbench names them.
	for i, name := range []string{"txlog.0", "txlog.1"} {
		b := readTestdata(t, name)
		if err := os.WriteFile(filepath.Join(dir, "tx."+string(rune('0'+i))), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	all, err := latencies(dir, time.UnixMicro(0), time.UnixMicro(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	if all.TotalCount() != 10 || all.Max() != 2509 || all.Min() != 46 {
		t.Errorf("all: count %d, min %d, max %d", all.TotalCount(), all.Min(), all.Max())
	}
	// The window keeps transactions completed in [from, to).
	some, err := latencies(dir, time.UnixMicro(1795336816471363), time.UnixMicro(1795336816472407))
	if err != nil {
		t.Fatal(err)
	}
	if some.TotalCount() != 3 { // 471363, 471946 and 472331
		t.Errorf("window: count %d, want 3", some.TotalCount())
	}
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "pgbench", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
