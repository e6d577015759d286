package connstr

import (
	"errors"
	"testing"
)

// TestUnknownKeyword: a keyword libpq does not know is refused by Parse
// and ParsePgx with its name, as libpq's "invalid connection option",
// in keyword/value strings and URIs; what libpq, pgconn and pgx know
// passes, with any case of value.
func TestUnknownKeyword(t *testing.T) {
	tests := []struct {
		dsn  string
		want string // the keyword refused, or ""
	}{
		{"hostname=db1 dbname=app", "hostname"},
		{"host=db1 dbname=app pasword=x", "pasword"},
		{"host=db1 Host=db2", "Host"},
		{"host = db1 search_path=app", "search_path"},
		{"postgres://u@db1/app?hostname=db2", "hostname"},
		{"postgres://u@db1/app?sslmode=disable&connect_timout=3", "connect_timout"},
		{"host=/tmp port=5432 user=u dbname=app sslmode=disable application_name=x options='-c work_mem=4MB'", ""},
		{"host=db1 connect_timeout=3 target_session_attrs=read-write keepalives=1 client_encoding=UTF8", ""},
		{"host=db1 statement_cache_capacity=0 default_query_exec_mode=simple_protocol servicefile=/x", ""},
		{"postgres://u:p@db1:5432/app?sslmode=disable&application_name=x", ""},
		{"", ""},
	}
	for _, tt := range tests {
		for name, parse := range map[string]func(string) error{
			"Parse":    func(s string) error { _, err := Parse(s); return err },
			"ParsePgx": func(s string) error { _, err := ParsePgx(s); return err },
		} {
			err := parse(tt.dsn)
			var ue *UnknownKeywordError
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("%s(%q): %v", name, tt.dsn, err)
			case tt.want != "" && (!errors.As(err, &ue) || ue.Keyword != tt.want):
				t.Errorf("%s(%q) = %v, want %q refused", name, tt.dsn, err, tt.want)
			case tt.want != "" && err.Error() != `invalid connection option "`+tt.want+`"`:
				t.Errorf("%s(%q): message %q", name, tt.dsn, err)
			}
		}
	}
}
