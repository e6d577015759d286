package reset

import (
	"bytes"
	"testing"
)

// TestFor: each mode gets its reset with the target's fields; a mode
// For does not know, and ModeNone, leave the target as it is.
func TestFor(t *testing.T) {
	var out bytes.Buffer
	tg := Target{DSN: "host=a", Databases: []string{"shop"}, Command: "restore.sh", Name: "control", Output: &out}
	if r, ok := For(ModeTemplate, tg).(*Template); !ok || r.DSN != "host=a" || len(r.Databases) != 1 || r.Databases[0] != "shop" {
		t.Errorf("template: %#v", For(ModeTemplate, tg))
	}
	if r, ok := For(ModeCommand, tg).(*Command); !ok || r.Command != "restore.sh" || r.DSN != "host=a" || r.Name != "control" || r.Output != &out {
		t.Errorf("command: %#v", For(ModeCommand, tg))
	}
	if _, ok := For(ModeDataDir, tg).(*DataDir); !ok {
		t.Errorf("datadir: %#v", For(ModeDataDir, tg))
	}
	for _, m := range []Mode{ModeNone, "other"} {
		if r := For(m, tg); r.Mode() != ModeNone {
			t.Errorf("%s: %#v", m, r)
		}
	}
}
