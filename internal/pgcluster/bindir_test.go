package pgcluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeBin makes dir holding executable files named programs.
func fakeBin(t *testing.T, dir string, programs ...string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range programs {
		if err := os.WriteFile(filepath.Join(dir, p), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestFindBinDirOrder: $PG_BIN, then the newest versioned directory that
// has every program, then $PATH; an explicit choice is never replaced by a
// guess.
func TestFindBinDirOrder(t *testing.T) {
	tmp := t.TempDir()
	root := filepath.Join(tmp, "lib")
	v96 := fakeBin(t, filepath.Join(root, "9.6", "bin"), "initdb", "pg_ctl", "postgres", "pgbench")
	v10 := fakeBin(t, filepath.Join(root, "10", "bin"), "initdb", "pg_ctl", "postgres", "pgbench")
	v15 := fakeBin(t, filepath.Join(root, "15", "bin"), "initdb", "pg_ctl", "postgres") // no pgbench
	fakeBin(t, filepath.Join(root, "16", "bin"), "pgbench")                             // client only
	onPath := fakeBin(t, filepath.Join(tmp, "path"), "initdb", "pg_ctl", "postgres", "pgbench", "pg_dump")
	pgBin := fakeBin(t, filepath.Join(tmp, "pgbin"), "initdb", "pg_ctl", "postgres", "pgbench")
	empty := fakeBin(t, filepath.Join(tmp, "empty"))
	old := versionedRoot
	versionedRoot = root
	t.Cleanup(func() { versionedRoot = old })
	t.Setenv("PATH", onPath)

	cases := []struct {
		name     string
		dir      string
		pgBin    string
		programs []string
		want     string // "" for ErrNoBinaries
	}{
		{"newest version with the server", "", "", serverPrograms, v15},
		{"newest version with pgbench", "", "", []string{"pgbench"}, filepath.Join(root, "16", "bin")},
		{"newest version with both", "", "", []string{"initdb", "pgbench"}, v10},
		{"$PATH after the versions", "", "", []string{"pg_dump"}, onPath},
		{"$PG_BIN first", "", pgBin, serverPrograms, pgBin},
		{"$PG_BIN is not replaced by a guess", "", empty, serverPrograms, ""},
		{"an explicit directory first", v96, pgBin, serverPrograms, v96},
		{"an explicit directory is not replaced by a guess", empty, "", []string{"pgbench"}, ""},
		{"nowhere", "", "", []string{"pg_nosuch"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PG_BIN", tc.pgBin)
			got, err := FindBinDir(tc.dir, tc.programs...)
			if tc.want == "" {
				if !errors.Is(err, ErrNoBinaries) {
					t.Fatalf("FindBinDir = %q, %v; want ErrNoBinaries", got, err)
				}
				for _, p := range tc.programs {
					if !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "PG_BIN") {
						t.Errorf("error %q does not name %s and PG_BIN", err, p)
					}
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("FindBinDir = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
