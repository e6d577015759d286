package targetlog

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestCheck: a target at its default logging settings lacks every one the
// target log needs, all said at once; one set as Settings says lacks
// none; csvlog needs no prefix.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{"lc_messages": "C"}})
	tests := []struct {
		name string
		set  map[string]string
		want []string
	}{
		{"defaults", map[string]string{"log_min_duration_statement": "-1", "log_line_prefix": "'%m [%p] '"},
			[]string{"log_min_duration_statement is -1: set it to 0", `log_line_prefix "%m [%p] " lacks %p or %c`}},
		{"slow only, no %p", map[string]string{"log_min_duration_statement": "'250ms'", "log_line_prefix": "'%m %c '"},
			[]string{"log_min_duration_statement is 250ms", "lacks %p or %c"}},
		{"as needed", map[string]string{"log_min_duration_statement": "0", "log_line_prefix": "'%m [%p] %q%u@%d/%a %c '"}, nil},
		{"csvlog", map[string]string{"log_min_duration_statement": "0", "log_line_prefix": "'%m '", "log_destination": "'csvlog'", "logging_collector": "on"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.set {
				pgclustertest.Exec(t, c, "postgres", "ALTER SYSTEM SET "+k+" = "+v)
			}
			pgclustertest.Exec(t, c, "postgres", "SELECT pg_reload_conf()")
			// pg_reload_conf only signals: poll new sessions until they
			// have the prefix, which each case sets apart.
			want := strings.Trim(tt.set["log_line_prefix"], "'")
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				conn, err := pgconn.Connect(ctx, c.DSN("postgres"))
				if err != nil {
					t.Fatal(err)
				}
				res, err := conn.Exec(ctx, "SHOW log_line_prefix").ReadAll()
				conn.Close(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if string(res[0].Rows[0][0]) == want {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("log_line_prefix never became %q", want)
				}
			}
			got, err := Check(ctx, c.DSN("postgres"))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("missing %q, want %d items like %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("item %d %q, want %q", i, got[i], w)
				}
			}
		})
	}
}

func TestMissingSettingsMessages(t *testing.T) {
	if got := missingSettings("0", "stderr", "%m [%p] %c ", "de_DE.UTF-8"); len(got) != 1 || !strings.Contains(got[0], `lc_messages is "de_DE.UTF-8"`) {
		t.Errorf("lc_messages: %q", got)
	}
	if got := missingSettings("0", "stderr,jsonlog", "%m ", "en_US.UTF-8"); len(got) != 0 {
		t.Errorf("jsonlog with en_US: %q", got)
	}
}
