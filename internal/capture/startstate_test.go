package capture

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestManifestStartState: a writer given a start state writes it into the
// manifest and a reader reads it back whole; a manifest without one (as
// every capture before it was written) reads with none.
func TestManifestStartState(t *testing.T) {
	st := &StartState{
		Time: time.Date(2026, 11, 25, 6, 30, 0, 123000, time.UTC), LSN: "0/16B3748",
		ServerVersion: "15.4", ServerVersionNum: 150004, SystemIdentifier: "7311086263391062323",
		Databases: []StartDatabase{
			{Name: "shop", Tables: []StartTable{{Schema: "public", Name: "orders", Rows: 1_500_000, RowsFrom: RowsReltuples, Bytes: 1 << 30}}},
			{Name: "secret", Error: "permission denied for database secret"},
		},
	}
	dir := t.TempDir()
	w, err := Create(dir, WriterOptions{StartState: st})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(EndInfo{}); err != nil {
		t.Fatal(err)
	}
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.StartState, st) {
		t.Errorf("start state read back %+v, want %+v", m.StartState, st)
	}

	old := t.TempDir()
	b, err := json.Marshal(map[string]any{"format": manifestFormat, "version": 1, "segments": 1, "complete": true})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, ManifestName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	m, err = ReadManifest(old)
	if err != nil || m.StartState != nil || !m.Complete {
		t.Errorf("a manifest without start_state: %+v, %v; want complete with none", m, err)
	}
}
