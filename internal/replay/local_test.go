package replay

import "testing"

func TestTargetLocal(t *testing.T) {
	cases := []struct {
		dsn  string
		want bool
	}{
		{"host=/tmp/pg port=5432", true},
		{"postgres://u@localhost:5432/db", true},
		{"host=127.0.0.1", true},
		{"host=::1", true},
		{"postgres://u@[::1]:5433/db", true},
		{"host=db.example.com", false},
		{"host=10.0.0.5", false},
		{"postgres://u@192.168.1.20/db?sslmode=disable", false},
		{"host=10.0.0.5,localhost", false}, // the first host is what is reported
		{"port=notanumber", false},         // unparseable: not claimed local
	}
	for _, tc := range cases {
		if got := targetLocal(tc.dsn); got != tc.want {
			t.Errorf("targetLocal(%q) = %v, want %v", tc.dsn, got, tc.want)
		}
	}
}
