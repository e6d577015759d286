package deploy

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

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

func TestDashboardUsesExposedMetrics(t *testing.T) {
	names, labels := exposed(t)
	files, _ := filepath.Glob(filepath.Join("grafana", "*.json"))
	if len(files) == 0 {
		t.Fatal("no dashboard")
	}
	metric := regexp.MustCompile(`\b((?:pgrehearse|process)_[a-z0-9_]+)\b`)
	byClause := regexp.MustCompile(`\bby \(([^)]*)\)`)
	matcher := regexp.MustCompile(`([a-z_]+)\s*(?:=~|!=|!~|=)\s*"`)
	for _, f := range files {
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
				if l = strings.TrimSpace(l); l != "le" && !labels[l] {
					t.Errorf("%s: %q uses the label %s, which no metric has", f, e, l)
				}
			}
		}
		if used < len(d.Panels) {
			t.Errorf("%s: %d metric names in %d panels: the pattern misses some", f, used, len(d.Panels))
		}
	}
	if !labels["shard"] {
		t.Error("the metrics carry no shard label")
	}
}
