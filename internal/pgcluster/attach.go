package pgcluster

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Attach returns the cluster whose directory is dir (Cluster.Dir of a
// cluster started by this package in another process, such as the one
// `pgrehearse demo --keep` leaves), with its server running. The cluster
// is the caller's to use, not to remove: its Stop stops the server and
// leaves the directory, and no watchdog stops it when this process ends.
// Its snapshots go into the directory beside those already there. Its
// binaries are those the cluster was started with (binDirFile), so that
// a cluster of another major version than the installed one (a demo's
// upgrade candidate) is stopped and started by its own pg_ctl.
func Attach(dir string) (*Cluster, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, keep: true}
	if _, err := os.Stat(filepath.Join(c.DataDir(), "PG_VERSION")); err != nil {
		return nil, fmt.Errorf("pgcluster: %s is not a throwaway cluster's directory (no data/PG_VERSION): %w", dir, err)
	}
	if c.port, err = postmasterPort(c.DataDir()); err != nil {
		return nil, fmt.Errorf("pgcluster: the server of %s: %w", dir, err)
	}
	if c.bin, err = attachedBinDir(dir); err != nil {
		return nil, err
	}
	if c.cred, err = ServerCredential(); err != nil {
		return nil, err
	}
	old, _ := filepath.Glob(filepath.Join(dir, "snapshot-*"))
	for _, o := range old {
		if n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(o), "snapshot-")); err == nil {
			c.snapshots = max(c.snapshots, n)
		}
	}
	return c, nil
}

// binDirFile, in a cluster's directory, names the directory of the
// binaries Start ran it with.
const binDirFile = "bindir"

// attachedBinDir returns the bin directory recorded in the cluster
// directory dir, or, for a cluster started before it was recorded,
// FindBinDir's choice.
func attachedBinDir(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, binDirFile))
	if errors.Is(err, os.ErrNotExist) {
		return FindBinDir("", serverPrograms...)
	}
	if err != nil {
		return "", err
	}
	return FindBinDir(strings.TrimSpace(string(b)), serverPrograms...)
}

// postmasterPort reads the port of the server running on dataDir from its
// postmaster.pid (its fourth line).
func postmasterPort(dataDir string) (int, error) {
	f, err := os.Open(filepath.Join(dataDir, "postmaster.pid"))
	if errors.Is(err, os.ErrNotExist) {
		return 0, errors.New("it is not running (no postmaster.pid)")
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for i := 1; sc.Scan(); i++ {
		if i == 4 {
			port, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
			if err != nil || port <= 0 {
				return 0, fmt.Errorf("postmaster.pid: bad port %q", sc.Text())
			}
			return port, nil
		}
	}
	return 0, errors.New("postmaster.pid has no port line: the server is starting or stopping")
}

// Remove deletes the snapshot's copy of the data directory.
func (s *Snapshot) Remove() error {
	if s == nil || s.dir == "" {
		return nil
	}
	return os.RemoveAll(s.dir)
}
