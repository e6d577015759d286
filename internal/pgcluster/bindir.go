package pgcluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// serverPrograms are what a cluster needs; FindBinDir looks for them when
// Options.BinDir is empty.
var serverPrograms = []string{"initdb", "pg_ctl", "postgres"}

// versionedRoot holds Debian's side-by-side installations,
// <versionedRoot>/<major>/bin; a variable so that tests can point it
// elsewhere.
var versionedRoot = "/usr/lib/postgresql"

// FindBinDir returns the directory holding every one of the PostgreSQL
// programs named. It looks, in this order, which is also the order of the
// Makefile's postgres target:
//
//  1. dir, if not empty, else $PG_BIN, if set. An explicit choice is the
//     only candidate: a typo fails loudly instead of quietly running
//     another installation.
//  2. /usr/lib/postgresql/<major>/bin, newest major version first
//     (Debian installs versions side by side there).
//  3. The directory of the first program found on $PATH.
//
// When none holds them all, the error wraps ErrNoBinaries and says where
// it looked and how to install them.
func FindBinDir(dir string, programs ...string) (string, error) {
	var candidates []string
	switch {
	case dir != "":
		candidates = []string{dir}
	case os.Getenv("PG_BIN") != "":
		candidates = []string{os.Getenv("PG_BIN")}
	default:
		found, _ := filepath.Glob(filepath.Join(versionedRoot, "*", "bin"))
		// Newest major version first: "9.6" < "10" < "15".
		slices.SortFunc(found, func(a, b string) int { return versionOf(b) - versionOf(a) })
		candidates = found
		if len(programs) > 0 {
			if p, err := exec.LookPath(programs[0]); err == nil {
				candidates = append(candidates, filepath.Dir(p))
			}
		}
	}
	for _, d := range candidates {
		if hasPrograms(d, programs) {
			return d, nil
		}
	}
	where := strings.Join(candidates, ", ")
	if where == "" {
		where = filepath.Join(versionedRoot, "*", "bin") + " and $PATH"
	}
	return "", fmt.Errorf("%w in %s: install them with `%s` or set PG_BIN to the directory holding %s",
		ErrNoBinaries, where, InstallHint, strings.Join(programs, ", "))
}

func hasPrograms(dir string, programs []string) bool {
	for _, name := range programs {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// versionOf returns the major version of <versionedRoot>/<v>/bin times
// 100, so that 9.6 sorts below 10.
func versionOf(binDir string) int {
	v := filepath.Base(filepath.Dir(binDir))
	major, minor, _ := strings.Cut(v, ".")
	a, _ := strconv.Atoi(major)
	b, _ := strconv.Atoi(minor)
	return a*100 + b
}
