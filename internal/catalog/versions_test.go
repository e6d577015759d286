package catalog_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/catalog"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestVersionsPGSS loads the catalog's pg_stat_statements on each major
// of pgcluster.Majors, with the extension's default version and, on 13
// and 18, with 1.7: an extension carried over from PostgreSQL 12 by
// pg_upgrade keeps 1.7's view (total_time, no plans) on a newer server
// until ALTER EXTENSION ... UPDATE. The columns follow the extension's
// version; chosen by the server's, the 1.7 cases failed with "column
// s.plans does not exist" and lost every row.
func TestVersionsPGSS(t *testing.T) {
	type tc struct {
		major      int
		extversion string // "" for the default
	}
	var cases []tc
	for _, m := range pgcluster.Majors {
		cases = append(cases, tc{m, ""})
	}
	cases = append(cases, tc{13, "1.7"}, tc{18, "1.7"})
	for _, tc := range cases {
		name := fmt.Sprint(tc.major)
		if tc.extversion != "" {
			name += "/pgss-" + tc.extversion
		}
		t.Run(name, func(t *testing.T) {
			// Each version on servers of its own: the versions run side by side.
			t.Parallel()
			c := pgclustertest.StartVersion(t, tc.major, map[string]string{
				"shared_preload_libraries":          "pg_stat_statements",
				"pg_stat_statements.track_planning": "on",
			})
			ctx := context.Background()
			create := "CREATE EXTENSION pg_stat_statements"
			if tc.extversion != "" {
				create += " VERSION '" + tc.extversion + "'"
			}
			pgclustertest.Exec(t, c, "postgres", create+"; CREATE TABLE t (a int); SELECT pg_stat_statements_reset()")
			for range 3 {
				pgclustertest.Exec(t, c, "postgres", "SELECT count(*) FROM t WHERE a = 7")
			}
			conn := pgclustertest.Connect(ctx, t, c.DSN("postgres"))
			defer conn.Close(ctx)
			cat, err := catalog.Load(ctx, conn, catalog.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if cat.PGSS == nil {
				t.Fatalf("no pg_stat_statements: %s", cat.PGSSReason)
			}
			wantPlans := tc.extversion == ""
			if cat.PGSS.HasPlanColumns != wantPlans || cat.PGSS.TrackPlanning != wantPlans {
				t.Errorf("HasPlanColumns %v, TrackPlanning %v; want %v", cat.PGSS.HasPlanColumns, cat.PGSS.TrackPlanning, wantPlans)
			}
			var found bool
			for _, r := range cat.PGSS.Rows {
				if strings.HasPrefix(r.Query, "SELECT count(*) FROM t WHERE a = $1") {
					found = true
					if r.Calls != 3 || r.ExecMS <= 0 || wantPlans && r.Plans != 3 {
						t.Errorf("%+v: want 3 calls, 3 plans where tracked", r)
					}
				}
			}
			if !found {
				t.Errorf("the query is not among the %d rows", len(cat.PGSS.Rows))
			}
		})
	}
}
