package promsink

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/replay"
)

func TestMetricsServed(t *testing.T) {
	m, addr, stop, err := Serve("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("metrics listen on %s, want loopback", addr)
	}
	m.SessionOpened()
	m.SessionOpened()
	m.SessionClosed()
	m.Statement(replay.Sample{Fingerprint: "abc", Latency: 2 * time.Millisecond, Lag: time.Millisecond})
	m.Statement(replay.Sample{Fingerprint: "abc", SQLState: "40P01", Latency: time.Millisecond})
	m.Statement(replay.Sample{Skipped: "copy data not in log"})
	m.Statement(replay.Sample{Fingerprint: "abc", Latency: time.Millisecond, SyncWait: 3 * time.Millisecond})
	m.Statement(replay.Sample{Fingerprint: "abc", Latency: time.Millisecond, SyncWait: 10 * time.Second, SyncGiveUp: replay.SyncTimeout})
	m.ReaderPosition(1_700_000_000_000_000)

	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`pgrehearse_replay_errors_total{sqlstate="40P01"} 1`,
		"pgrehearse_replay_sessions_open 1",
		"pgrehearse_replay_latency_seconds_count 4",
		"pgrehearse_replay_schedule_lag_seconds_count 4",
		"pgrehearse_replay_sync_wait_seconds_count 2",
		`pgrehearse_replay_sync_giveups_total{reason="timeout"} 1`,
		"pgrehearse_replay_reader_log_time_seconds 1.7e+09",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", body)
	}
}

func TestListenAddrDefaultsToLoopback(t *testing.T) {
	for in, want := range map[string]string{":9187": "127.0.0.1:9187", "0.0.0.0:9187": "0.0.0.0:9187", "localhost:1": "localhost:1"} {
		if got := ListenAddr(in); got != want {
			t.Errorf("ListenAddr(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestShardLabelOnEveryMetric(t *testing.T) {
	m, addr, stop, err := ServeLabeled("127.0.0.1:0", map[string]string{"shard": "2"})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	m.Statement(replay.Sample{Fingerprint: "abc", Latency: time.Millisecond})
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	seen := 0
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		seen++
		if !strings.Contains(line, `shard="2"`) {
			t.Errorf("a metric without the shard label: %s", line)
		}
	}
	if seen == 0 || !strings.Contains(string(body), "process_cpu_seconds_total{") {
		t.Errorf("no metrics, or no process CPU:\n%s", body)
	}
}
