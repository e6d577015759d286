package observe

import (
	"encoding/json"
	"errors"
	"testing"
)

// The evidence JSON keeps the words it always had for an extension's
// state (docs/evidence-json.md), an unreadable one with its error, and
// reads them back into the same typed state.
func TestExtensionStateJSON(t *testing.T) {
	functionalCase(t)
	for _, tc := range []struct {
		state ExtensionState
		json  string
	}{
		{ExtensionState{Status: ExtInstalled}, `"installed"`},
		{ExtensionState{Status: ExtNotPreloaded}, `"not_preloaded"`},
		{ExtensionState{Status: ExtNotCreated}, `"not_created"`},
		{ExtensionState{Status: ExtAvailable}, `"available"`},
		{ExtensionState{Status: ExtUnavailable}, `"unavailable"`},
		{ExtensionState{Status: ExtMissing}, `"missing"`},
		{unreadable(errors.New("ERROR: could not access file: No such file")), `"unreadable: ERROR: could not access file: No such file"`},
	} {
		b, err := json.Marshal(tc.state)
		if err != nil || string(b) != tc.json {
			t.Errorf("%+v: %s, %v; want %s", tc.state, b, err, tc.json)
			continue
		}
		var back ExtensionState
		if err := json.Unmarshal(b, &back); err != nil || back != tc.state {
			t.Errorf("%s read back as %+v, %v; want %+v", b, back, err, tc.state)
		}
	}
	c := Capabilities{PGSS: unreadable(errors.New("boom")), WaitSampling: ExtensionState{Status: ExtMissing}, WaitSource: WaitsFromActivity}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["pg_stat_statements"] != "unreadable: boom" || doc["pg_wait_sampling"] != "missing" || doc["wait_source"] != "pg_stat_activity" {
		t.Errorf("capabilities JSON: %s", b)
	}
	if !c.PGSS.Is(ExtUnreadable) || c.PGSS.Is(ExtInstalled) {
		t.Errorf("Is: %+v", c.PGSS)
	}
}
