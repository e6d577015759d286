package reset

import (
	"context"
	"errors"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
)

// DataDir resets a throwaway cluster by restoring a copy of its data
// directory taken at Prepare (pgcluster.Cluster.Snapshot). Each reset
// restarts the server on its port, so every round starts with empty
// shared buffers, as the first does.
type DataDir struct {
	Cluster *pgcluster.Cluster

	snap *pgcluster.Snapshot
}

// Mode is ModeDataDir.
func (d *DataDir) Mode() Mode { return ModeDataDir }

// Prepare copies the data directory (stopping the server meanwhile).
func (d *DataDir) Prepare(ctx context.Context) error {
	if d.Cluster == nil {
		return errors.New("reset: no cluster to snapshot")
	}
	snap, err := d.Cluster.Snapshot(ctx)
	if err != nil {
		return err
	}
	d.snap = snap
	return nil
}

// Reset restores the copy.
func (d *DataDir) Reset(ctx context.Context, round int) (State, error) {
	if d.snap == nil {
		return State{}, errors.New("reset: Reset before Prepare")
	}
	t := time.Now()
	if err := d.Cluster.Restore(ctx, d.snap); err != nil {
		return State{}, err
	}
	return State{Mode: ModeDataDir, Round: round, Seconds: since(t)}, nil
}

// Restarter is a reset that may restart the server between its reset and
// its release, for a fix round whose setting needs a restart: its next
// reset undoes the setting with everything else.
type Restarter interface {
	Restart(ctx context.Context) error
}

// Restart restarts the cluster's server (fast: sessions are ended).
func (d *DataDir) Restart(ctx context.Context) error {
	if d.Cluster == nil {
		return errors.New("reset: no cluster to restart")
	}
	return d.Cluster.Restart(ctx, "fast")
}

// Release does nothing: the next Reset restores.
func (d *DataDir) Release(context.Context, State) error { return nil }

// Close removes the copy: it is as large as the data directory, and a
// cluster attached from another process (pgcluster.Attach) outlives the
// rehearsal.
func (d *DataDir) Close(context.Context) error {
	err := d.snap.Remove()
	d.snap = nil
	return err
}
