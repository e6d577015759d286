package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/cli"
	"github.com/pgrehearse/pgrehearse/internal/promsink"
	"github.com/pgrehearse/pgrehearse/internal/replay"
)

// exposed scrapes the metrics a shard serves, after a sample of every
// kind so that labelled series exist, and returns the series names and
// label names seen.
func exposed(t *testing.T) (names, labels map[string]bool) {
	t.Helper()
	m, addr, stop, err := promsink.ServeLabeled("127.0.0.1:0", map[string]string{"shard": "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	m.SessionOpened()
	m.Statement(replay.Sample{Fingerprint: "a", Latency: time.Millisecond})
	m.Statement(replay.Sample{Fingerprint: "a", SQLState: "23505", Latency: time.Millisecond})
	m.Statement(replay.Sample{Skipped: "copy data not in log"})
	m.Statement(replay.Sample{Fingerprint: "a", SyncWait: time.Second, SyncGiveUp: replay.SyncTimeout})
	m.ReaderPosition(1)
	return scrape(t, addr)
}

// syncBuffer is a bytes.Buffer the capture command writes to while the
// test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var metricsOnRE = regexp.MustCompile(`metrics on http://(\S+)/metrics`)

// exposedCapture runs the capture proxy as the sidecar runs it, with
// --metrics, waits until it listens, and returns the series names and label names it serves.
// Its series are counters, gauges and a histogram whose labels take
// fixed values (from: client, server), so each exists before the first
// client; no server is needed, since the proxy dials the upstream only
// for a client.
func exposedCapture(t *testing.T) (names, labels map[string]bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stderr syncBuffer
	go func() {
		done <- cli.Run(ctx, cli.IO{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr}, []string{"capture",
			"--listen=127.0.0.1:0", "--upstream=host=127.0.0.1 port=1 sslmode=disable",
			"--out=" + filepath.Join(t.TempDir(), "capture"), "--metrics=127.0.0.1:0"})
	}()
	defer func() {
		cancel()
		<-done
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		// The metrics are registered once the proxy listens.
		if out := stderr.String(); strings.Contains(out, "listening on") {
			m := metricsOnRE.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("capture says no metrics address:\n%s", out)
			}
			return scrape(t, m[1])
		}
		select {
		case code := <-done:
			done <- code
			t.Fatalf("capture exited %d before serving metrics:\n%s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("capture did not serve metrics within 30 s:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond) // polling the command's output
	}
}

// scrape reads addr's /metrics and returns the series names and label
// names seen.
func scrape(t *testing.T, addr string) (names, labels map[string]bool) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	names, labels = map[string]bool{}, map[string]bool{}
	series := regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})?`)
	label := regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="`)
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s := series.FindStringSubmatch(line)
		names[s[1]] = true
		for _, l := range label.FindAllStringSubmatch(s[3], -1) {
			labels[l[1]] = true
		}
	}
	return names, labels
}

// targetLabels are the labels Prometheus attaches to every series it
// scrapes: a dashboard may select and group by them though no program
// serves them.
var targetLabels = map[string]bool{"instance": true, "job": true}

// dashboardSources names the program whose metrics each dashboard reads:
// the sharded replay's, or the capture proxy's.
var dashboardSources = map[string]func(*testing.T) (map[string]bool, map[string]bool){
	"sharded-replay.json": exposed,
	"capture-proxy.json":  exposedCapture,
}

func TestDashboardUsesExposedMetrics(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("grafana", "*.json"))
	if len(files) != len(dashboardSources) {
		t.Errorf("dashboards %v, want %d: each needs its program in dashboardSources", files, len(dashboardSources))
	}
	metric := regexp.MustCompile(`\b((?:pgrehearse|process)_[a-z0-9_]+)\b`)
	byClause := regexp.MustCompile(`\bby \(([^)]*)\)`)
	matcher := regexp.MustCompile(`([a-z_]+)\s*(?:=~|!=|!~|=)\s*"`)
	for _, f := range files {
		source := dashboardSources[filepath.Base(f)]
		if source == nil {
			t.Errorf("%s: no program in dashboardSources serves its metrics", f)
			continue
		}
		names, labels := source(t)
		if filepath.Base(f) == "sharded-replay.json" && !labels["shard"] {
			t.Error("the replay's metrics carry no shard label")
		}
		if filepath.Base(f) == "capture-proxy.json" {
			// The time the proxy adds, by direction.
			for _, n := range []string{"pgrehearse_capture_relay_seconds_bucket", "pgrehearse_capture_relay_seconds_sum", "pgrehearse_capture_relay_seconds_count"} {
				if !names[n] {
					t.Errorf("capture --metrics serves no %s", n)
				}
			}
			if !labels["from"] || !labels["le"] {
				t.Error("the capture's metrics carry no from or le label")
			}
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
			Templating struct {
				List []struct {
					Query any `json:"query"`
				} `json:"list"`
			} `json:"templating"`
		}
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var exprs []string
		for _, p := range d.Panels {
			if len(p.Targets) == 0 {
				t.Errorf("%s: panel %q has no query", f, p.Title)
			}
			for _, tg := range p.Targets {
				exprs = append(exprs, tg.Expr)
			}
		}
		for _, v := range d.Templating.List {
			if q, ok := v.Query.(string); ok && strings.Contains(q, "label_values") {
				exprs = append(exprs, q)
			}
		}
		used := 0
		for _, e := range exprs {
			for _, m := range metric.FindAllStringSubmatch(e, -1) {
				used++
				if !names[m[1]] {
					t.Errorf("%s: %q uses %s, which pgrehearse does not expose", f, e, m[1])
				}
			}
			var ls []string
			for _, m := range byClause.FindAllStringSubmatch(e, -1) {
				ls = append(ls, strings.Split(m[1], ",")...)
			}
			for _, m := range matcher.FindAllStringSubmatch(e, -1) {
				ls = append(ls, m[1])
			}
			for _, l := range ls {
				if l = strings.TrimSpace(l); l != "le" && !labels[l] && !targetLabels[l] {
					t.Errorf("%s: %q uses the label %s, which no metric has", f, e, l)
				}
			}
		}
		if used < len(d.Panels) {
			t.Errorf("%s: %d metric names in %d panels: the pattern misses some", f, used, len(d.Panels))
		}
	}
}
