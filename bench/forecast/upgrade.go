package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
)

// The major version with the data upgraded (issue 76): the candidate is
// built on the control's major, then pg_upgrade moves its data directory
// to the new major's cluster, and the candidate runs there. Statistics
// are as pg_upgrade leaves them (no ANALYZE after it): the new major may
// plan differently until ANALYZE, which the rehearsal should say.

// upgradePrograms are the new major's programs pg_upgrade needs beside
// itself.
var upgradePrograms = []string{"pg_upgrade", "initdb", "pg_ctl", "postgres", "pg_dump", "pg_dumpall", "pg_restore", "psql", "pg_controldata", "pg_resetwal"}

// upgradeBinDir returns the new major's bin directory, with pg_upgrade
// and the programs it runs, or an error that says what is missing.
func upgradeBinDir(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("-upgrade-bin is empty: the pg-upgrade change needs the new major's installation with pg_upgrade")
	}
	for _, p := range upgradePrograms {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			return "", fmt.Errorf("-upgrade-bin %s has no %s (make pg-versions' builds ship initdb, pg_ctl and postgres alone): "+
				"the pg-upgrade change needs a full installation of the new major (server and client programs): make pg-upgrade-bin MAJOR=18 builds one into .cache/pg-full/18", dir, p)
		}
	}
	return filepath.Abs(dir)
}

// upgradeCandidate stops old (the candidate built on the control's
// major), makes a new cluster from the binaries in newBin, runs
// pg_upgrade from old's data directory into it (copy mode, its default) and starts
// it; old is removed. It returns the upgraded cluster, running.
func upgradeCandidate(ctx context.Context, old *pgcluster.Cluster, newBin string, keep bool) (*pgcluster.Cluster, error) {
	nc, err := pgcluster.Start(ctx, pgcluster.Options{Settings: clusterSettings(nil), Keep: keep, BinDir: newBin,
		// The control's default (15: off), which pg_upgrade requires
		// the new cluster to match.
		Checksums: pgcluster.ChecksumsOff})
	if err != nil {
		return nil, fmt.Errorf("the new major's cluster: %w", err)
	}
	if err := errors.Join(nc.StopServer(), old.StopServer()); err != nil {
		return nil, errors.Join(err, nc.Stop())
	}
	cmd := exec.CommandContext(ctx, filepath.Join(newBin, "pg_upgrade"),
		"--old-bindir", old.BinDir(), "--new-bindir", newBin,
		"--old-datadir", old.DataDir(), "--new-datadir", nc.DataDir(),
		"--old-port", strconv.Itoa(old.Port()), "--new-port", strconv.Itoa(nc.Port()),
		"--username", nc.User(), "--socketdir", nc.Dir())
	// pg_upgrade writes its reports into its working directory (and,
	// from 15 on, into the new data directory): the new cluster's.
	cmd.Dir = nc.Dir()
	cred, err := pgcluster.ServerCredential()
	if err != nil {
		return nil, errors.Join(err, nc.Stop())
	}
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("pg_upgrade: %w\n%s", err, out), nc.Stop())
	}
	say("pg_upgrade from %s to %s: done (statistics as it left them, no ANALYZE)", old.BinDir(), newBin)
	if err := nc.StartServer(ctx); err != nil {
		return nil, errors.Join(err, nc.Stop())
	}
	return nc, old.Stop()
}
