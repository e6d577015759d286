package cli

import (
	"bytes"
	"context"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// versionLogSettings are workload.LogSettings as PostgreSQL major takes
// them: jsonlog exists from 15, and from 18 log_connections takes a list,
// "all" adding the "connection ready: setup total=..." line.
func versionLogSettings(major int) (map[string]string, []string) {
	s := maps.Clone(workload.LogSettings())
	patterns := []string{"*.log", "*.csv", "*.json"}
	if major < 15 {
		s["log_destination"] = "stderr,csvlog"
		patterns = patterns[:2]
	}
	if major >= 18 {
		s["log_connections"] = "all"
	}
	return s, patterns
}

// TestVersionsAnalyzeMatchesPgStatStatements is the log reader's
// acceptance test on each major of pgcluster.Majors, on that server's own
// logs in each format it writes (stderr and csvlog; jsonlog from 15),
// with the lines 17 and 18 add per connection ("connection
// authenticated", "connection ready"): after a short pgbench run in the
// simple and the extended protocol, analyze's successful calls per
// fingerprint equal the server's pg_stat_statements calls.
func TestVersionsAnalyzeMatchesPgStatStatements(t *testing.T) {
	slowCase(t, 10*time.Second)
	for _, major := range pgcluster.Majors {
		t.Run(strconv.Itoa(major), func(t *testing.T) {
			ctx := context.Background()
			settings, patterns := versionLogSettings(major)
			c := pgclustertest.StartVersion(t, major, settings)
			// The set-up is not logged: only the run is compared.
			unlogged := []string{"PGOPTIONS=-c log_min_duration_statement=-1"}
			if out, err := c.PgbenchEnv(ctx, unlogged, "-i", "-q", "-s", "1", "postgres"); err != nil {
				t.Fatalf("pgbench -i: %v\n%s", err, out)
			}
			conn, err := pgconn.Connect(ctx, c.DSN("postgres")+" options='-c log_min_duration_statement=-1'")
			if err != nil {
				t.Fatal(err)
			}
			_, err = conn.Exec(ctx, "CREATE EXTENSION pg_stat_statements; SELECT pg_stat_statements_reset()").ReadAll()
			conn.Close(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, mode := range []string{"simple", "extended"} {
				if out, err := c.Pgbench(ctx, "-n", "-M", mode, "-c", "2", "-t", "50", "postgres"); err != nil {
					t.Fatalf("pgbench: %v\n%s", err, out)
				}
			}
			server := pgssCalls(ctx, t, c)
			if err := c.StopServer(); err != nil {
				t.Fatal(err)
			}
			excluded := fingerprintSet("SELECT pg_stat_statements_reset()", pgssQuery)
			// The lines each version adds per connection are there, so
			// the counts above were read past them.
			if files, err := c.LogFiles("*.log"); err == nil && len(files) == 1 {
				b := readFile(t, files[0])
				for _, l := range []struct {
					from int
					line string
				}{{17, "connection authenticated: "}, {18, "connection ready: setup total="}} {
					if got := bytes.Contains(b, []byte(l.line)); got != (major >= l.from) {
						t.Errorf("%q in the log: %v, want %v", l.line, got, major >= l.from)
					}
				}
			}
			for _, pattern := range patterns {
				t.Run(pattern, func(t *testing.T) {
					files, err := c.LogFiles(pattern)
					if err != nil || len(files) != 1 {
						t.Fatalf("log files %v: %v", files, err)
					}
					logged := analyzeCalls(t, files[0])
					checkPgssCalls(t, logged, server, excluded, func(_ string, calls int64) int64 { return calls }, 7, "pgbench")
				})
			}
		})
	}
}
