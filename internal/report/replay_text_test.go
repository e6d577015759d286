package report

import (
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// TestWriteReplay: the summary accounts for every statement, says where
// latencies were measured and, for client round trips, how to get
// server-side durations in the caller's words; a dry run says neither.
func TestWriteReplay(t *testing.T) {
	res := &results.Result{Kind: results.KindReplay, Replay: &results.Replay{Speed: 1, WallSeconds: 12.5}}
	res.Statements = results.StatementCounts{Total: 10, Executed: 7, Failed: 1, Skipped: map[results.SkipReason]int64{results.SkipParamsMissing: 2}}
	res.Sessions.Total = 3
	var b strings.Builder
	if err := WriteReplay(&b, res, Hints{TargetLog: "--target-log"}); err != nil {
		t.Fatal(err)
	}
	wantIn(t, "summary", b.String(),
		"Replay at speed 1, 12.5 s\n",
		"  statements: 10 total, 7 executed, 1 failed, 2 skipped\n",
		"    skipped, parameters not logged: 2\n",
		"  latency:    client round trips (network and client time included); --target-log gives server-side durations\n",
	)
	b.Reset()
	if err := WriteReplay(&b, res, Hints{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "  latency:    client round trips (network and client time included)\n") {
		t.Errorf("summary without hints:\n%s", b.String())
	}
	res.DryRun = true
	b.Reset()
	if err := WriteReplay(&b, res, Hints{TargetLog: "--target-log"}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "Replay (dry run: nothing was sent) at speed 1") || !strings.Contains(b.String(), "would be sent") {
		t.Errorf("dry run summary:\n%s", b.String())
	}
	// Only what a dry run measures: nothing ran, so no latency, error,
	// execution or reconnect figure.
	for _, no := range []string{"latency:", "errors:", "executed", "failed", "reconnects", "only in the original"} {
		if strings.Contains(b.String(), no) {
			t.Errorf("dry run summary shows %q, which it did not measure:\n%s", no, b.String())
		}
	}
}

// The summary says what synchronizing the sessions cost, or that they
// were not synchronized, with the replay's notes.
func TestWriteReplaySync(t *testing.T) {
	res := &results.Result{Kind: results.KindReplay, Replay: &results.Replay{Speed: 0, WallSeconds: 2}}
	res.Sync = &results.Sync{Mode: "commit", TimeoutSeconds: 3, Waited: 12, Timeouts: 1, Notes: []string{"a note"}}
	res.SyncWait = &results.Distribution{TotalMS: 40, P50: 1, P99: 9.5, Max: 12}
	var b strings.Builder
	if err := WriteReplay(&b, res, Hints{}); err != nil {
		t.Fatal(err)
	}
	want := "  sync:       commit; 12 statements waited for other sessions' commits, 40.0 ms in all (p50 1.00 ms, p99 9.50 ms, max 12.00 ms); 1 gave up after 3s without progress, 0 to end a deadlock with a row lock\n    a note\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
	res.Sync, res.SyncWait = &results.Sync{Mode: "off"}, nil
	b.Reset()
	if err := WriteReplay(&b, res, Hints{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "  sync:       off: sessions ran without waiting") {
		t.Errorf("summary without sync:\n%s", b.String())
	}
}

// TestWriteReplaySettings: a replay whose sessions may have run with
// other connection settings than the original's says so, with its note,
// and so does a comparison of it; failures after a skipped fast-path call
// are named; a replay with nothing suspect says neither.
func TestWriteReplaySettings(t *testing.T) {
	res := &results.Result{Kind: results.KindReplay, Source: "regress", Replay: &results.Replay{Speed: 0, WallSeconds: 9}}
	res.Statements = results.StatementCounts{Total: 10, Executed: 10}
	res.Outcomes = results.Outcomes{FailedOnlyOnTarget: 2, OnlyOnTargetAfterFastPath: 1}
	res.StartupSettings = &results.StartupSettings{Note: "a server log does not record the settings (TimeZone UTC)"}
	var b strings.Builder
	if err := WriteReplay(&b, res, Hints{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "settings:") {
		t.Errorf("nothing suspect, yet the settings are said:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "    1 of those only on the target followed, in their session, a fast-path call the replay skipped") {
		t.Errorf("the failure after a fast-path call is not named:\n%s", b.String())
	}
	res.StartupSettings.Suspect = true
	b.Reset()
	if err := WriteReplay(&b, res, Hints{}); err != nil {
		t.Fatal(err)
	}
	want := "  settings:   the sessions may have run with other connection settings than the original's, which change results silently: a server log does not record the settings (TimeZone UTC)\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
	w := compare.Warning{Kind: compare.WarnStartupSettings, Run: "regress", Text: res.StartupSettings.Note}
	if got := WarningText(w); !strings.HasPrefix(got, "regress: its sessions may have run with other connection settings") || !strings.HasSuffix(got, "(TimeZone UTC)") {
		t.Errorf("comparison warning %q", got)
	}
}

// TestWriteReplayFinish: the summary says how far behind its schedule a
// paced replay finished, beside its lag, which a lag p99 of 1.7 ms does
// not say (issue 57 item 8); nothing without a schedule.
func TestWriteReplayFinish(t *testing.T) {
	res := &results.Result{Kind: results.KindReplay, Replay: &results.Replay{Speed: 10, WallSeconds: 86.6}}
	res.Lag = &results.Distribution{Count: 100, P50: 0.2, P99: 1.7, Max: 3}
	res.Finish = &results.Finish{ScheduleSeconds: 60, BehindSeconds: 26.6}
	for _, tt := range []struct {
		finish *results.Finish
		want   string
	}{
		{&results.Finish{ScheduleSeconds: 60, BehindSeconds: 26.6}, "  lag:        p50 0.20 ms, p99 1.70 ms, max 3.00 ms; finished 26.6 s behind its 60.0 s schedule\n"},
		{&results.Finish{ScheduleSeconds: 60, BehindSeconds: 0.01}, "  lag:        p50 0.20 ms, p99 1.70 ms, max 3.00 ms; finished on its 60.0 s schedule\n"},
		{nil, "  lag:        p50 0.20 ms, p99 1.70 ms, max 3.00 ms\n"},
	} {
		res.Finish = tt.finish
		var b strings.Builder
		if err := WriteReplay(&b, res, Hints{}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), tt.want) {
			t.Errorf("finish %+v: summary lacks %q:\n%s", tt.finish, tt.want, b.String())
		}
	}
}

// TestWriteReplayReadAhead: a replay whose reader waited at its memory
// budget says at how much and how long; one that never reached it says
// nothing of it.
func TestWriteReplayReadAhead(t *testing.T) {
	res := &results.Result{Kind: results.KindReplay, Replay: &results.Replay{Speed: 10, WallSeconds: 90}}
	res.Statements = results.StatementCounts{Total: 10, Executed: 10}
	res.Reader = results.ReaderCounts{Events: 10, MaxBufferedBytes: 60 << 20, BudgetBytes: 64 << 20}
	var b strings.Builder
	if err := WriteReplay(&b, res, Hints{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "read-ahead") {
		t.Errorf("a reader that never waited is said to be held:\n%s", b.String())
	}
	res.Reader.BudgetWaits, res.Reader.BudgetWaitMS = 40, 31_250
	b.Reset()
	if err := WriteReplay(&b, res, Hints{}); err != nil {
		t.Fatal(err)
	}
	if want := "  reader:     read-ahead held at 64 MiB: the dispatcher waited 31.2 s for the target\n"; !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
	res.Reader.BudgetBytes = 12 << 10
	if got, want := ReadAheadHeld(res.Reader), "read-ahead held at 12 KiB:"; !strings.HasPrefix(got, want) {
		t.Errorf("ReadAheadHeld = %q, want it to begin %q", got, want)
	}
}
