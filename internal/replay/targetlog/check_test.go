package targetlog

import (
	"context"
	"os"
	"path/filepath"
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

// TestRotatedDuringReplay: the server begins a new log file during the
// replay (pg_rotate_logfile, as a rotation at midnight or by size does),
// and the statement marking the replay's end goes there: it is found,
// in the file begun, not in the ones noted before.
func TestRotatedDuringReplay(t *testing.T) {
	ctx := context.Background()
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{
		"lc_messages": "C", "logging_collector": "on", "log_min_duration_statement": "0", "log_line_prefix": "%m [%p] %q%u@%d/%a %c "}})
	files, err := Expand([]string{filepath.Join(c.LogDir(), "*.log")})
	if err != nil {
		t.Fatal(err)
	}
	f := Note(files, "")
	// The collector rotates when it next wakes, into a file named by the
	// second (log_filename's default): within the second the server
	// started in it appends to the same file. Rotate until a file is
	// begun.
	for deadline := time.Now().Add(30 * time.Second); len(f.begun()) == 0; time.Sleep(100 * time.Millisecond) {
		pgclustertest.Exec(t, c, "postgres", "SELECT pg_rotate_logfile()")
		if time.Now().After(deadline) {
			entries, _ := os.ReadDir(c.LogDir())
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Fatalf("no log file begun after pg_rotate_logfile() in %s: it holds %v, noted %v", c.LogDir(), names, files)
		}
	}
	marker, err := sendMarker(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.waitFor(ctx, marker); err != nil {
		t.Fatalf("waitFor: %v, want the marker found in the file begun during the replay", err)
	}
	for i, p := range files {
		if fileHas(p, f.offsets[i], marker) {
			t.Errorf("the marker is in %s, noted before the rotation: the test did not rotate first", p)
		}
	}
}
