package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// A throwaway cluster returns to an earlier state by copying its data
// directory: the rehearsal of a workload that writes replays it several
// times, each time from the same start, and a test checks that the start
// is the same.

// Snapshot is a copy of a cluster's data directory, taken while its server
// was stopped, inside the cluster's directory (so Stop removes it unless
// Options.Keep is set).
type Snapshot struct {
	c   *Cluster
	dir string
}

// Dir is where the copy is.
func (s *Snapshot) Dir() string { return s.dir }

// Snapshot stops the server (a fast shutdown: open sessions are ended),
// copies its data directory and starts it again on its port when it was
// running. The copy is of a cleanly shut down server, so a Restore of it
// starts without recovery.
func (c *Cluster) Snapshot(ctx context.Context) (*Snapshot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil, errors.New("pgcluster: the cluster was removed")
	}
	wasUp := !c.serverDown
	if err := c.stopServerLocked(); err != nil {
		return nil, err
	}
	c.snapshots++
	dir := filepath.Join(c.dir, "snapshot-"+strconv.Itoa(c.snapshots))
	if err := c.copyTree(ctx, c.DataDir(), dir); err != nil {
		return nil, errors.Join(fmt.Errorf("pgcluster: snapshot: %w", err), os.RemoveAll(dir))
	}
	if wasUp {
		if err := c.startLocked(ctx); err != nil {
			return nil, err
		}
	}
	return &Snapshot{c: c, dir: dir}, nil
}

// Restore stops the server (a fast shutdown), replaces its data directory
// with a copy of s and starts it again on its port. The log directory is
// not in the data directory and is kept. The old data directory is
// removed only once the copy is complete, so a failed Restore leaves the
// cluster as it was (stopped).
func (c *Cluster) Restore(ctx context.Context, s *Snapshot) error {
	if s == nil || s.c != c {
		return errors.New("pgcluster: restore: the snapshot is of another cluster")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return errors.New("pgcluster: the cluster was removed")
	}
	if err := c.stopServerLocked(); err != nil {
		return err
	}
	fresh := filepath.Join(c.dir, "data.restore")
	old := filepath.Join(c.dir, "data.old")
	if err := errors.Join(os.RemoveAll(fresh), os.RemoveAll(old)); err != nil {
		return err
	}
	if err := c.copyTree(ctx, s.dir, fresh); err != nil {
		return errors.Join(fmt.Errorf("pgcluster: restore: %w", err), os.RemoveAll(fresh))
	}
	if err := os.Rename(c.DataDir(), old); err != nil {
		return errors.Join(err, os.RemoveAll(fresh))
	}
	if err := os.Rename(fresh, c.DataDir()); err != nil {
		// Put the old one back: a cluster without a data directory
		// could not even be started to look at.
		return errors.Join(err, os.Rename(old, c.DataDir()))
	}
	if err := os.RemoveAll(old); err != nil {
		return err
	}
	return c.startLocked(ctx)
}

// startLocked starts the stopped server on its port; c.mu is held.
func (c *Cluster) startLocked(ctx context.Context) error {
	logStart := fileSize(c.ServerLog())
	out, err := c.server(ctx, "pg_ctl", "start", "-w", "-t", "120", "-D", c.DataDir(),
		"-l", c.ServerLog(), "-o", "-p "+strconv.Itoa(c.port)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl start: %w\n%s\nserver log:\n%s", err, out, readFrom(c.ServerLog(), logStart))
	}
	c.serverDown = false
	return nil
}

// copyTree copies the directory src to dst, which must not exist: regular
// files with their contents and permissions, directories, and symbolic
// links as links. What it creates is owned by the server's user. Files are
// copied by io.Copy, which uses copy_file_range on Linux (a reflink where
// the file system has them).
func (c *Cluster) copyTree(ctx context.Context, src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(target, info.Mode().Perm()); err != nil {
				return err
			}
			// Mkdir applies the umask; the server insists on 0700.
			if err := os.Chmod(target, info.Mode().Perm()); err != nil {
				return err
			}
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			if err := os.Symlink(link, target); err != nil {
				return err
			}
		case d.Type().IsRegular():
			if err := copyFile(path, target, info.Mode().Perm()); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: not a file, directory or link (%v)", path, d.Type())
		}
		return c.lchown(target)
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		return errors.Join(err, out.Close())
	}
	if err := out.Chmod(perm); err != nil {
		return errors.Join(err, out.Close())
	}
	return out.Close()
}

func (c *Cluster) lchown(path string) error {
	if c.cred == nil {
		return nil
	}
	if err := os.Lchown(path, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
		return &fs.PathError{Op: "chown", Path: path, Err: errors.Unwrap(err)}
	}
	return nil
}
