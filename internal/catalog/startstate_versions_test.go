package catalog_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/catalog"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestVersionsStartState reads a start state as a role with pg_monitor
// only, on each major of pgcluster.Majors, and checks a copy against it.
// A table never analyzed has reltuples -1 from 14 on, and 0 with relpages
// 0 before: both are read as unknown, and the statistics' live rows stand
// in at the start. The copy (CREATE DATABASE ... TEMPLATE) carries
// reltuples but not the statistics, so the table never analyzed is
// counted there; the table with fewer rows and the one dropped are named.
// A database the role may not connect to is left out.
func TestVersionsStartState(t *testing.T) {
	for _, major := range pgcluster.Majors {
		t.Run(fmt.Sprint(major), func(t *testing.T) {
			t.Parallel()
			// No autovacuum: the table never analyzed stays so.
			c := pgclustertest.StartVersion(t, major, map[string]string{"autovacuum": "off"})
			ctx := context.Background()
			for _, q := range []string{
				"CREATE ROLE monitor LOGIN IN ROLE pg_monitor",
				"CREATE DATABASE other", "CREATE DATABASE closed", "REVOKE CONNECT ON DATABASE closed FROM PUBLIC",
			} {
				pgclustertest.Exec(t, c, "postgres", q)
			}
			if err := c.Exec(ctx, "postgres", `CREATE TABLE analyzed (id int PRIMARY KEY);
				INSERT INTO analyzed SELECT generate_series(1, 3000); ANALYZE analyzed;
				CREATE TABLE fresh (id int); INSERT INTO fresh SELECT generate_series(1, 500);
				CREATE TABLE empty (id int)`); err != nil {
				t.Fatal(err)
			}
			pgclustertest.Exec(t, c, "other", "CREATE SCHEMA s; CREATE TABLE s.t (id int)")
			// The live rows reach the statistics asynchronously before 15.
			waitFor(t, c, "SELECT n_live_tup = 500 FROM pg_stat_user_tables WHERE relname = 'fresh'")

			st, err := catalog.ReadStartState(ctx, c.DSN("postgres")+" user=monitor", catalog.Options{}, catalog.StartCount{})
			if err != nil {
				t.Fatal(err)
			}
			if !regexp.MustCompile(`^[0-9A-F]+/[0-9A-F]+$`).MatchString(st.LSN) || st.Standby || st.ServerVersionNum/10000 != major ||
				st.SystemIdentifier == "" || time.Since(st.Time) > time.Minute {
				t.Errorf("start state %+v: want this primary's LSN, major %d, a system identifier, the time now", st, major)
			}
			var names []string
			rows := map[string]string{}
			for _, db := range st.Databases {
				names = append(names, db.Name)
				if db.Error != "" {
					t.Errorf("database %s: %s", db.Name, db.Error)
				}
				for _, tb := range db.Tables {
					rows[db.Name+"."+tb.Schema+"."+tb.Name] = fmt.Sprint(tb.Rows, " ", tb.RowsFrom)
				}
			}
			if !slices.Equal(names, []string{"other", "postgres"}) {
				t.Errorf("databases %v, want other and postgres: not closed, nor the templates", names)
			}
			for k, want := range map[string]string{
				"postgres.public.analyzed": "3000 reltuples", "postgres.public.fresh": "500 n_live_tup", "other.s.t": "0",
			} {
				if got := rows[k]; !strings.HasPrefix(got+" ", want+" ") {
					t.Errorf("%s: %q, want %q", k, got, want)
				}
			}
			if got := rows["postgres.public.empty"]; !strings.HasPrefix(got, "0 ") {
				t.Errorf("empty: %q, want 0 rows", got)
			}

			// Counted: as the monitoring role, which may not read the
			// tables, each count is skipped and says why, the estimate
			// kept; as a superuser, every table is counted.
			denied, err := catalog.ReadStartState(ctx, c.DSN("postgres")+" user=monitor", catalog.Options{}, catalog.StartCount{Below: 1 << 30})
			if err != nil {
				t.Fatal(err)
			}
			counted, err := catalog.ReadStartState(ctx, c.DSN("postgres"), catalog.Options{}, catalog.StartCount{Below: 1 << 30, Budget: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			for _, db := range denied.Databases {
				for _, tb := range db.Tables {
					if tb.RowsFrom == capture.RowsCounted || !strings.Contains(tb.CountError, "permission denied") {
						t.Errorf("%s.%s read as a role without SELECT: %+v, want the estimate and the count's refusal", db.Name, tb.Name, tb)
					}
				}
			}
			for _, db := range counted.Databases {
				for _, tb := range db.Tables {
					if want := map[string]int64{"analyzed": 3000, "fresh": 500}[tb.Name]; tb.RowsFrom != capture.RowsCounted || tb.Rows != want || tb.CountError != "" {
						t.Errorf("%s.%s read as a superuser: %+v, want %d rows counted", db.Name, tb.Name, tb, want)
					}
				}
			}
			// A budget spent: nothing is counted, each table says so,
			// at the start and on the target alike.
			spent, err := catalog.ReadStartState(ctx, c.DSN("postgres"), catalog.Options{}, catalog.StartCount{Below: 1 << 30, Budget: time.Nanosecond})
			if err != nil {
				t.Fatal(err)
			}
			for _, db := range spent.Databases {
				for _, tb := range db.Tables {
					if tb.RowsFrom == capture.RowsCounted || !strings.Contains(tb.CountError, "the counts took their budget of 1ns") {
						t.Errorf("%s.%s read with its budget spent: %+v, want the estimate, the budget said", db.Name, tb.Name, tb)
					}
				}
			}
			late, err := catalog.CheckStartState(ctx, c.DSN("postgres"), counted, map[string]string{"postgres": "postgres"}, catalog.DefaultStartTolerance, time.Nanosecond, catalog.Options{})
			if err != nil || len(late.Databases) != 1 || len(late.Databases[0].Uncounted) != 3 || !strings.Contains(late.Databases[0].Uncounted[0].CountError, "budget") {
				t.Errorf("a check with its budget spent: %+v, %v; want the 3 tables said uncounted, by the budget", late, err)
			}
			// Counts 50 apart (more than 1% and 10 rows) differ, unless
			// the start saw 100 rows written while it counted.
			for _, drift := range []int64{0, 100} {
				moved := *counted
				moved.Databases = []capture.StartDatabase{{Name: "postgres"}}
				for _, db := range counted.Databases {
					if db.Name == "postgres" {
						moved.Databases[0].Tables = slices.Clone(db.Tables)
					}
				}
				for i, tb := range moved.Databases[0].Tables {
					if tb.Name == "analyzed" {
						moved.Databases[0].Tables[i].Rows, moved.Databases[0].Tables[i].CountDrift = 3050, drift
					}
				}
				ck, err := catalog.CheckStartState(ctx, c.DSN("postgres"), &moved, map[string]string{"postgres": "postgres"}, catalog.DefaultStartTolerance, 0, catalog.Options{})
				if err != nil || len(ck.Databases) != 1 || ck.Databases[0].Compared != 3 {
					t.Fatalf("check with drift %d: %+v, %v", drift, ck, err)
				}
				want := []catalog.TableDiff{{Schema: "public", Name: "analyzed", Start: 3050, Target: 3000, StartFrom: capture.RowsCounted, TargetFrom: capture.RowsCounted}}
				if drift > 0 {
					want = nil
				}
				if d := ck.Databases[0].Differ; !slices.Equal(d, want) {
					t.Errorf("counts 3,050 at the start and 3,000 on the target, %d rows written while counting: differ %+v, want %+v", drift, d, want)
				}
			}
			if counted.CountBelow != 1<<30 || denied.CountBelow != 1<<30 || st.CountBelow != 0 {
				t.Errorf("count_below %d, %d and %d, want the limit asked, and 0 when nothing was counted", counted.CountBelow, denied.CountBelow, st.CountBelow)
			}

			pgclustertest.Exec(t, c, "postgres", "CREATE DATABASE copy TEMPLATE postgres")
			pgclustertest.Exec(t, c, "copy", "DELETE FROM analyzed WHERE id > 1000; ANALYZE analyzed; DROP TABLE empty")
			check, err := catalog.CheckStartState(ctx, c.DSN("postgres"), st, map[string]string{"postgres": "copy"}, catalog.DefaultStartTolerance, 0, catalog.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(check.Databases) != 1 || !check.Differs() {
				t.Fatalf("check %+v: want one database, differing", check)
			}
			d := check.Databases[0]
			want := []catalog.TableDiff{
				{Schema: "public", Name: "analyzed", Start: 3000, Target: 1000, StartFrom: capture.RowsReltuples, TargetFrom: capture.RowsReltuples},
				{Schema: "public", Name: "empty", Start: 0, Target: -1, Missing: true},
			}
			// empty's start rows are reltuples before 14, n_live_tup from 14 on.
			for _, tb := range st.Databases[1].Tables {
				if tb.Name == "empty" {
					want[1].StartFrom = tb.RowsFrom
				}
			}
			if d.Name != "postgres" || d.Target != "copy" || d.Error != "" || d.Compared != 2 || !slices.Equal(d.Differ, want) || len(d.Unchecked) != 0 {
				t.Errorf("database check %+v, want %s: analyzed and empty differ, analyzed and fresh compared", d, "postgres as copy")
			}
			// The same copy as it was: within the tolerance.
			check, err = catalog.CheckStartState(ctx, c.DSN("postgres"), st, map[string]string{"postgres": "postgres", "other": "other"}, catalog.DefaultStartTolerance, 0, catalog.Options{})
			if err != nil || check.Differs() || len(check.Databases) != 2 {
				t.Errorf("the source against itself: %+v, %v; want two databases, no difference", check, err)
			}
		})
	}
}

// waitFor polls q (a boolean) until it is true, for 30 s at most.
func waitFor(t *testing.T, c *pgcluster.Cluster, q string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	deadline := time.Now().Add(30 * time.Second)
	for {
		var ok bool
		if err := conn.QueryRow(context.Background(), q).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still false after 30 s", q)
		}
		time.Sleep(50 * time.Millisecond) // polling the statistics, not synchronizing with a goroutine
	}
}
