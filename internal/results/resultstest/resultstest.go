// Package resultstest builds small results for the tests of the packages
// that read them (compare, report): rows with round figures and replay
// results from them, through results.Decode as a file would be read. It is
// for tests only (it imports testing); nothing in the binary imports it.
package resultstest

import (
	"encoding/json"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/results"
)

// Row is a query row with round figures: n timed calls of meanMS each,
// p95 at p95MS.
func Row(fp string, n int64, meanMS, p95MS float64) map[string]any {
	return map[string]any{"fingerprint": fp, "query": "SELECT " + fp, "calls": n, "timed_calls": n,
		"total_ms": float64(n) * meanMS, "mean_ms": meanMS, "p50_ms": meanMS, "p95_ms": p95MS, "p99_ms": p95MS, "max_ms": p95MS}
}

// Replay is a replay result named name: server-side queries when client
// is set (a replay that read the target's log), client round trips
// otherwise. extra sets or overrides top-level fields.
func Replay(t testing.TB, name string, extra map[string]any, queries []map[string]any, client []map[string]any) *results.Result {
	t.Helper()
	res := map[string]any{"kind": "replay", "speed": 1, "wall_seconds": 10, "statements": map[string]int64{"total": 1000},
		"queries": queries}
	if client != nil {
		res["latency_source"], res["client_queries"] = "server_log", client
	}
	for k, v := range extra {
		res[k] = v
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	r, err := results.Decode(b, name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// ServerRows and ClientRows are one replay's queries as the target's log
// timed them and as the client did: three fingerprints timed on both
// sides (busy, slow, rare), one on each side only, one untimed on the
// server.
func ServerRows() []map[string]any {
	return []map[string]any{Row("busy", 500, 0.2, 0.4), Row("slow", 20, 10, 14), Row("rare", 3, 1, 1),
		Row("serveronly", 50, 1, 2), {"fingerprint": "untimed", "query": "SELECT 0", "calls": 9}}
}

// ClientRows: see ServerRows.
func ClientRows() []map[string]any {
	return []map[string]any{Row("busy", 500, 0.7, 1.5), Row("slow", 20, 10.5, 15), Row("rare", 3, 0.99, 1),
		Row("clientonly", 50, 1, 2), Row("untimed", 9, 1, 1)}
}
