package connstr

import "testing"

func TestIsLocal(t *testing.T) {
	cases := []struct {
		dsn  string
		want bool
	}{
		// Unix sockets: a directory, or libpq's abstract namespace.
		{"host=/tmp/pg port=5432", true},
		{"host=/var/run/postgresql dbname=app", true},
		{"postgres://u@%2Fvar%2Frun%2Fpostgresql/db", true},
		{"postgres:///db?host=/tmp", true},
		{"host=@pgsock", true},
		// Loopback: all of 127.0.0.0/8 and ::1.
		{"host=localhost", true},
		{"host=LOCALHOST", true},
		{"postgres://u@localhost:5432/db", true},
		{"postgres://u:secret@localhost/db", true},
		{"host=127.0.0.1", true},
		{"host=127.0.0.2", true},
		{"host=127.255.255.254 port=5433", true},
		{"host=::1", true},
		{"postgres://u@[::1]:5433/db", true},
		{"host=::ffff:127.0.0.1", true},
		// Remote.
		{"host=db.example.com", false},
		{"host=10.0.0.5", false},
		{"host=128.0.0.1", false},
		{"host=::2", false},
		{"postgres://u@192.168.1.20/db?sslmode=disable", false},
		{"postgres://localuser@db.example.com/db", false},
		{"postgres://u@127.0.0.1.example.com/db", false},
		// Several hosts: local only when every one is.
		{"host=10.0.0.5,localhost", false},
		{"host=localhost,10.0.0.5", false},
		{"host=/tmp,127.0.0.1 port=5432,5433", true},
		{"postgres://u@localhost:5432,127.0.0.2:5433/db", true},
		{"postgres://u@localhost:5432,db.example.com:5433/db", false},
		// Unparsable: not claimed local.
		{"port=notanumber", false},
	}
	for _, tc := range cases {
		if got := IsLocal(tc.dsn); got != tc.want {
			t.Errorf("IsLocal(%q) = %v, want %v", tc.dsn, got, tc.want)
		}
	}
}

// The libpq environment fills in what the string leaves out, as it does
// when connecting.
func TestIsLocalEnvironment(t *testing.T) {
	t.Setenv("PGHOST", "db.example.com")
	if IsLocal("dbname=app") {
		t.Error("PGHOST=db.example.com taken for this machine")
	}
	if !IsLocal("host=/tmp dbname=app") {
		t.Error("an explicit socket directory loses to PGHOST")
	}
	t.Setenv("PGHOST", "127.0.0.3")
	if !IsLocal("dbname=app") {
		t.Error("PGHOST=127.0.0.3 not taken for this machine")
	}
}
