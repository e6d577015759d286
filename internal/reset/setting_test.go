package reset

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestSetServer: a setting a reload applies is seen by new sessions when
// SetServer returns and is put back by its undo, to the server's own
// line in postgresql.auto.conf when it had one and to none when not; one
// that needs a restart is set by a restart under a Restarter, and
// refused (ErrCannotRestart) under a reset that cannot restart; a setting
// the server refuses is an error that leaves nothing behind.
func TestSetServer(t *testing.T) {
	t.Parallel()
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	dsn := c.DSN("postgres")
	current := func(name string) (value, auto string) {
		t.Helper()
		conn := pgclustertest.Connect(ctx, t, dsn)
		defer conn.Close(ctx)
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&value); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRow(ctx, `SELECT coalesce(max(setting), '') FROM pg_file_settings
			WHERE name = $1 AND sourcefile LIKE '%postgresql.auto.conf'`, name).Scan(&auto); err != nil {
			t.Fatal(err)
		}
		return value, auto
	}
	cases := []struct {
		name, setting, alter string
		before               string // the server's own ALTER SYSTEM, "" for none
		rs                   Resetter
		restart              bool
		during, auto         string // in a new session, in postgresql.auto.conf
		after, afterAuto     string
		err                  error
	}{
		{name: "reload, none before", setting: "work_mem", alter: `ALTER SYSTEM SET "work_mem" = '7MB'`, rs: None{},
			during: "7MB", auto: "7MB", after: "4MB", afterAuto: ""},
		{name: "reload, the server's own before", setting: "work_mem", alter: `ALTER SYSTEM SET "work_mem" = '7MB'`, rs: None{},
			before: `ALTER SYSTEM SET work_mem = '5MB'`, during: "7MB", auto: "7MB", after: "5MB", afterAuto: "5MB"},
		{name: "restart", setting: "max_locks_per_transaction", alter: `ALTER SYSTEM SET "max_locks_per_transaction" = '128'`,
			rs: &DataDir{Cluster: c}, restart: true, during: "128", auto: "128", after: "64", afterAuto: ""},
		{name: "no restart under this reset", setting: "max_locks_per_transaction", alter: `ALTER SYSTEM SET "max_locks_per_transaction" = '128'`,
			rs: None{}, restart: true, err: ErrCannotRestart, after: "64", afterAuto: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.before != "" {
				pgclustertest.Exec(t, c, "postgres", tc.before, "SELECT pg_reload_conf()")
				defer pgclustertest.Exec(t, c, "postgres", "ALTER SYSTEM RESET "+tc.setting, "SELECT pg_reload_conf()")
				// The reload is the postmaster's to make: wait for it.
				deadline := time.Now().Add(30 * time.Second)
				for v, _ := current(tc.setting); v != tc.after; v, _ = current(tc.setting) {
					if time.Now().After(deadline) {
						t.Fatalf("the server's own %s: still %s after its reload", tc.setting, v)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			undo, err := SetServer(ctx, dsn, tc.rs, tc.setting, tc.alter, tc.restart)
			if !errors.Is(err, tc.err) {
				t.Fatalf("SetServer: %v, want %v", err, tc.err)
			}
			if err == nil {
				if v, auto := current(tc.setting); v != tc.during || auto != tc.auto {
					t.Errorf("set: %s in a new session, %q in postgresql.auto.conf; want %s, %q", v, auto, tc.during, tc.auto)
				}
				if err := undo(ctx); err != nil {
					t.Fatalf("undo: %v", err)
				}
			} else if undo != nil {
				t.Errorf("SetServer failed (%v) and gave an undo", err)
			}
			if v, auto := current(tc.setting); v != tc.after || auto != tc.afterAuto {
				t.Errorf("after: %s in a new session, %q in postgresql.auto.conf; want %s, %q", v, auto, tc.after, tc.afterAuto)
			}
		})
	}
	t.Run("refused", func(t *testing.T) {
		undo, err := SetServer(ctx, dsn, None{}, "checkpoint_timeout", `ALTER SYSTEM SET "checkpoint_timeout" = 'banana'`, false)
		if err == nil || undo != nil {
			t.Fatalf("SetServer of a bad value: undo %t, %v; want an error", undo != nil, err)
		}
		if v, auto := current("checkpoint_timeout"); v != "5min" || auto != "" {
			t.Errorf("after: %s, %q in postgresql.auto.conf; want 5min, none", v, auto)
		}
	})
}
