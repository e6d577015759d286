package pgcluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// InitCacheEnv names the environment variable that, set to a directory,
// makes Start copy a pristine data directory made once per binaries by
// initdb, instead of running initdb for every cluster. initdb is most of
// a throwaway cluster's start (about 2.3 CPU-seconds on the 2-core test
// machine, against about 1 for the copy), and the test suites start
// hundreds of them: make test sets it. Unset, or a directory the
// server's user cannot reach, every cluster runs initdb.
const InitCacheEnv = "PGREHEARSE_INITDB_CACHE"

// initdbArgs are the options of every cluster's initdb, after -D: the
// template is made with the same ones. --no-locale with UTF8: byte-wise
// collation and English messages whatever the machine's locale; -N skips
// the fsync of the new directory, which a throwaway cluster does not
// need.
var initdbArgs = []string{"-U", superuser, "-A", "trust", "-E", "UTF8", "--no-locale", "-N"}

// initdbArgsFor returns initdb's options for a cluster of the binaries in
// bin with data checksums as sums says: --data-checksums for on (every
// version has it); for off, --no-data-checksums where initdb has it (from
// 18, whose default is on), nothing before (off is their default). Only
// an explicit off asks the binaries their version.
func initdbArgsFor(bin string, sums Checksums) ([]string, error) {
	args := slices.Clone(initdbArgs)
	switch sums {
	case ChecksumsDefault:
	case ChecksumsOn:
		args = append(args, "--data-checksums")
	case ChecksumsOff:
		major, err := MajorOf(bin)
		if err != nil {
			return nil, err
		}
		if InitdbChecksums(major) == ChecksumsOn {
			args = append(args, "--no-data-checksums")
		}
	default:
		return nil, fmt.Errorf("pgcluster: Options.Checksums %q: use %q, %q or empty (initdb's default)", sums, ChecksumsOn, ChecksumsOff)
	}
	return args, nil
}

// makeData makes the cluster's data directory: a copy of the cached
// template of its binaries when InitCacheEnv names a usable cache, else
// by initdb.
func (c *Cluster) makeData(ctx context.Context) error {
	if cache := os.Getenv(InitCacheEnv); cache != "" {
		if tmpl, err := c.template(ctx, cache); err == nil {
			out, err := exec.CommandContext(ctx, "cp", "-a", tmpl, c.DataDir()).CombinedOutput()
			if err == nil {
				return nil
			}
			// A partial copy is removed, and initdb makes it.
			if rmErr := os.RemoveAll(c.DataDir()); rmErr != nil {
				return fmt.Errorf("copy of the initdb template %s: %v %s; %w", tmpl, err, out, rmErr)
			}
		}
	}
	return c.initdb(ctx, c.DataDir())
}

func (c *Cluster) initdb(ctx context.Context, dir string) error {
	if out, err := c.server(ctx, "initdb", append([]string{"-D", dir}, c.initdbArgs...)...).CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	return nil
}

// template returns the data directory of the cache made by initdb with
// c's binaries and options (keyed by the binaries' directory, initdb's
// size and time, so that an upgrade of the binaries makes a new one, and
// initdb's options, so that a cluster with data checksums never starts
// from a template without, or the reverse), making it first when
// missing. Processes starting clusters at once make it once: the first
// holds a lock on it while the others wait.
func (c *Cluster) template(ctx context.Context, cache string) (string, error) {
	fi, err := os.Stat(filepath.Join(c.bin, "initdb"))
	if err != nil {
		return "", err
	}
	h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%d\x00%s", c.bin, fi.Size(), fi.ModTime().UnixNano(), strings.Join(c.initdbArgs, " "))))
	dir := filepath.Join(cache, hex.EncodeToString(h[:8]))
	data := filepath.Join(dir, "data")
	ready := filepath.Join(dir, "ready")
	if _, err := os.Stat(ready); err == nil {
		return data, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if !reachable(dir) {
		return "", fmt.Errorf("the server's user cannot reach %s", dir)
	}
	if err := c.chown(dir); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(ready); err == nil {
		return data, nil // made while this process waited
	}
	// A template left half made by a process that died is made again.
	if err := os.RemoveAll(data); err != nil {
		return "", err
	}
	if err := c.initdb(ctx, data); err != nil {
		return "", errors.Join(err, os.RemoveAll(data))
	}
	if err := os.WriteFile(ready, nil, 0o644); err != nil {
		return "", err
	}
	return data, nil
}
