package replayrun

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/batch"
	"github.com/pgrehearse/pgrehearse/internal/connstr"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// batching is Config.BatchInserts at work: the sources that merge the
// INSERTs, and the target's WAL position before the replay.
type batching struct {
	srcs []*batch.Source
	wal  string
}

// batchInserts wraps srcs when cfg asks to batch INSERTs (nil batching
// otherwise) and reads the target's WAL position.
func batchInserts(ctx context.Context, cfg Config, srcs []event.Source) ([]event.Source, *batching) {
	if cfg.BatchInserts <= 0 {
		return srcs, nil
	}
	b := &batching{}
	out := make([]event.Source, len(srcs))
	for i, s := range srcs {
		bs := batch.New(s, cfg.BatchInserts)
		b.srcs, out[i] = append(b.srcs, bs), bs
	}
	if !cfg.Replay.DryRun {
		var err error
		if b.wal, err = walPosition(ctx, cfg.Replay.Target, ""); err != nil && cfg.Warn != nil {
			cfg.Warn(fmt.Sprintf("the target's WAL position cannot be read, the batched INSERTs' WAL is not measured: %v", err))
		}
	}
	return out, b
}

// finish writes the counts into res, with the time of the INSERTs into
// the batched tables and the WAL the target wrote meanwhile.
func (b *batching) finish(ctx context.Context, cfg Config, res *results.Result) {
	if b == nil || res.Replay == nil {
		return
	}
	c := batch.Sum(b.srcs)
	c.WALBytes = -1
	if b.wal != "" {
		if d, err := walPosition(ctx, cfg.Replay.Target, b.wal); err == nil {
			fmt.Sscan(d, &c.WALBytes)
		} else if cfg.Warn != nil {
			cfg.Warn(fmt.Sprintf("the target's WAL position cannot be read after the replay: %v", err))
		}
	}
	for _, q := range res.Queries {
		cl, err := fingerprint.Statement(q.Query)
		if err != nil || cl.Insert == nil {
			continue
		}
		name := cl.Insert.Rel.Name
		if cl.Insert.Rel.Schema != "" {
			name = cl.Insert.Rel.Schema + "." + name
		}
		if _, ok := c.Tables[name]; ok {
			c.InsertMS += q.TotalMS
		}
	}
	res.BatchInserts = c
}

// walPosition is the target's WAL insert position, or with since the
// bytes written after since.
func walPosition(ctx context.Context, dsn, since string) (string, error) {
	cfg, err := connstr.Parse(dsn)
	if err != nil {
		return "", err
	}
	cfg.RuntimeParams["application_name"] = event.OwnApplicationPrefix + "wal"
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), PreflightTimeout)
	defer cancel()
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return "", connstr.SafeError(err)
	}
	defer conn.Close(context.Background())
	sql := "SELECT pg_current_wal_insert_lsn()::text"
	var args [][]byte
	if since != "" {
		sql, args = "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn)::bigint::text", [][]byte{[]byte(since)}
	}
	rr := conn.ExecParams(ctx, sql, args, nil, nil, nil).Read()
	if rr.Err != nil {
		return "", rr.Err
	}
	if len(rr.Rows) != 1 || len(rr.Rows[0]) != 1 {
		return "", fmt.Errorf("no WAL position")
	}
	return string(rr.Rows[0][0]), nil
}
