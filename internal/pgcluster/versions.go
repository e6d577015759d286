package pgcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
)

// Majors are the PostgreSQL major versions pgrehearse is tested on, the
// ones hack/pg-versions.txt pins and `make pg-versions` fetches into the
// version cache.
var Majors = []int{13, 14, 15, 16, 17, 18}

// VersionsHint is the command that fills the version cache.
const VersionsHint = "make pg-versions"

// ErrNoVersion is returned, wrapped in an error naming VersionsHint, when
// the version cache does not hold the major version asked for.
var ErrNoVersion = errors.New("PostgreSQL version not in the cache")

// CacheDir is the version cache: $PGREHEARSE_PG_CACHE if set, else
// .cache/pg in the module's root, found by walking up from the current
// directory to go.mod (a test runs in its package's directory).
func CacheDir() (string, error) {
	if d := os.Getenv("PGREHEARSE_PG_CACHE"); d != "" {
		return filepath.Abs(d)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, ".cache", "pg"), nil
		}
		if d == filepath.Dir(d) {
			return "", fmt.Errorf("pgcluster: no go.mod above %s to find the version cache by: set PGREHEARSE_PG_CACHE to the directory `%s` fills", wd, VersionsHint)
		}
	}
}

// BinDirFor returns the bin directory of PostgreSQL major version major
// in the version cache, <CacheDir>/<major>/bin. Those builds have the
// server and contrib (pg_stat_statements, auto_explain) but no pgbench:
// Pgbench then runs the installed one (see Cluster.Pgbench). When the
// version is missing the error wraps ErrNoVersion and names the command
// that installs it.
func BinDirFor(major int) (string, error) {
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, strconv.Itoa(major), "bin")
	if !hasPrograms(dir, serverPrograms) {
		return "", fmt.Errorf("%w: PostgreSQL %d is not in %s: run `%s` (versions pinned in hack/pg-versions.txt)",
			ErrNoVersion, major, cache, VersionsHint)
	}
	return dir, nil
}

// versionLine matches postgres --version: "postgres (PostgreSQL) 18.4",
// "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)".
var versionLine = regexp.MustCompile(`\(PostgreSQL\) (\d+)`)

// MajorOf returns the major version of the PostgreSQL server binaries in
// binDir (FindBinDir's choice when empty), as their postgres --version
// says, which needs no server: settings that exist only from some
// version on can be chosen before initdb.
func MajorOf(binDir string) (int, error) {
	bin, err := FindBinDir(binDir, serverPrograms...)
	if err != nil {
		return 0, err
	}
	out, err := exec.Command(filepath.Join(bin, "postgres"), "--version").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("%s --version: %w\n%s", filepath.Join(bin, "postgres"), err, out)
	}
	m := versionLine.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("%s --version says %q: no version", filepath.Join(bin, "postgres"), out)
	}
	return strconv.Atoi(string(m[1]))
}
