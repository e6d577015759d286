package reset

import (
	"maps"
	"testing"
)

// TestStateDatabaseMap: a round's map is the user's followed by the
// reset's copies.
func TestStateDatabaseMap(t *testing.T) {
	for _, tc := range []struct {
		name         string
		user, copies map[string]string
		want         map[string]string
	}{
		{"no copies", map[string]string{"a": "b"}, nil, map[string]string{"a": "b"}},
		{"copies only", nil, map[string]string{"app": "c_app", "": "c_pg"}, map[string]string{"app": "c_app", "": "c_pg"}},
		{"the user's map first", map[string]string{"prod": "app"}, map[string]string{"app": "c_app"},
			map[string]string{"prod": "c_app", "app": "c_app"}},
		{"a logged name mapped away keeps the user's target", map[string]string{"app": "other"}, map[string]string{"app": "c_app", "other": "c_other"},
			map[string]string{"app": "c_other", "other": "c_other"}},
		{"a target that is not copied", map[string]string{"prod": "ro"}, map[string]string{"app": "c_app"},
			map[string]string{"prod": "ro", "app": "c_app"}},
	} {
		if got := (State{Databases: tc.copies}).DatabaseMap(tc.user); !maps.Equal(got, tc.want) {
			t.Errorf("%s: DatabaseMap = %v, want %v", tc.name, got, tc.want)
		}
	}
}
