package results

import (
	"encoding/json"
	"testing"
)

// connectionsOf records setup times (µs) and failed attempts.
func connectionsOf(t *testing.T, failed int64, us ...int64) *Connections {
	t.Helper()
	rec := NewRecorder()
	for _, v := range us {
		rec.Record(v)
	}
	c, err := ConnectionsOf(rec, failed)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestConnectionsMerge: two shards' connection setup times merge into
// what one replay of both would have recorded, figure for figure, and a
// part without them (a result from before) leaves the other's.
func TestConnectionsMerge(t *testing.T) {
	a := connectionsOf(t, 1, 1000, 2000, 3000)
	b := connectionsOf(t, 2, 10000, 20000)
	whole := connectionsOf(t, 3, 1000, 2000, 3000, 10000, 20000)
	m, err := mergeConnections(&Result{}, &Result{}, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if m.Count != 5 || m.Failed != 3 || m.MeanMS != 7.2 || m.P95MS != whole.P95MS || m.Setup != whole.Setup {
		t.Errorf("merged %+v, want %+v", m, whole)
	}
	if only, err := mergeConnections(&Result{}, &Result{}, nil, b); err != nil || only.Count != 2 || only.MeanMS != 15 {
		t.Errorf("merged with nothing: %+v, %v", only, err)
	}
	if none, err := mergeConnections(&Result{}, &Result{}, nil, nil); err != nil || none != nil {
		t.Errorf("merged two results without connections: %+v, %v", none, err)
	}
	row, err := whole.Row()
	if err != nil {
		t.Fatal(err)
	}
	if row.Calls != 8 || row.TimedCalls != 5 || row.Errors != 3 || row.MeanMS != 7.2 || row.MaxMS != 20 || row.P50MS < 2.9 || row.P50MS > 3.1 || row.Hist == "" {
		t.Errorf("row %+v", row)
	}
}

// TestConnectionsJSON: a replay's connections survive its JSON, and a
// replay written before them loads without.
func TestConnectionsJSON(t *testing.T) {
	r := New(KindReplay, LatencyClient)
	r.Connections = connectionsOf(t, 0, 1500, 2500)
	var buf []byte
	buf, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(buf, "x.json")
	if err != nil {
		t.Fatal(err)
	}
	if back.Connections == nil || back.Connections.Count != 2 || back.Connections.MeanMS != 2 || back.Connections.Setup.Hist == "" {
		t.Errorf("decoded connections %+v", back.Connections)
	}
	old, err := Decode([]byte(`{"version":3,"kind":"replay","latency_source":"client","statements":{"total":0}}`), "old.json")
	if err != nil || old.Connections != nil {
		t.Errorf("a replay from before: %+v, %v", old, err)
	}
}
