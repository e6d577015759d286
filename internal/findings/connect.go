package findings

import (
	"context"
	"fmt"
	"runtime"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/catalog"
	"github.com/pgrehearse/pgrehearse/internal/connstr"
	"github.com/pgrehearse/pgrehearse/internal/event"
)

// Connect fills in's server inputs from dsn (nothing when it is empty):
// the catalog, an Explainer (EXPLAIN ANALYZE of plain SELECTs only when
// explainAnalyze), and the CPU count of a local server when in has none.
// The connection is used read-only, named as pgrehearse's own; the
// returned function closes it.
func Connect(ctx context.Context, dsn string, explainAnalyze bool, in *Input) (func(), error) {
	return ConnectTo(ctx, dsn, "", explainAnalyze, in)
}

// ConnectTo is Connect to database of the server at dsn (the DSN's own
// when empty): a replay's target, whose sessions each chose theirs.
func ConnectTo(ctx context.Context, dsn, database string, explainAnalyze bool, in *Input) (func(), error) {
	if dsn == "" {
		return func() {}, nil
	}
	cfg, err := connstr.ParsePgx(dsn)
	if err != nil {
		return nil, fmt.Errorf("connect for findings: %w", err)
	}
	if database != "" {
		cfg.Database = database
	}
	// Named as the tool's own: its catalog reads and EXPLAINs are not
	// the workload in an analysis of the server's log.
	cfg.RuntimeParams["application_name"] = event.OwnApplicationPrefix + "findings"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect for findings: %w", err)
	}
	closeConn := func() { conn.Close(context.WithoutCancel(ctx)) }
	_ = catalog.Untracked(ctx, conn)
	if in.Catalog, err = catalog.Load(ctx, conn, catalog.Options{}); err != nil {
		closeConn()
		return nil, fmt.Errorf("read the catalog: %w", err)
	}
	in.Explainer = &catalog.Explainer{Conn: conn, AllowAnalyze: explainAnalyze}
	if in.ServerCPUs == 0 && connstr.IsLocal(dsn) {
		in.ServerCPUs, in.CPUSource = runtime.NumCPU(), "local server: this machine's CPU count"
	}
	return closeConn, nil
}
