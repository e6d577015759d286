package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
)

// runChange measures one change: a control and a candidate built alike
// (but for the change), the truth in alternating rounds (control,
// candidate, candidate, control, ...) from their snapshots and the
// rehearsal of production's log onto the same two clusters from the same
// starting state, the rehearsal amid the truth's rounds (truthBefore). It keeps result.json and rehearse's report.json in
// OUT/CHANGE.
func runChange(ctx context.Context, o options, a *application, c change, prod recorded) (err error) {
	dir := filepath.Join(o.out, a.name, c.name)
	if err := os.MkdirAll(filepath.Join(dir, "pgbench"), 0o755); err != nil {
		return err
	}
	say("%s %s: building a control and a candidate (%s)", a.name, c.name, c.about)
	var group *serverCgroup
	if c.cpuFraction > 0 || c.memLimit {
		if group, err = candidateCgroup(&o, a, c); err != nil {
			return err
		}
		// After the clusters stop (deferred below): their processes
		// must be gone.
		defer func() {
			say("%s %s: the candidate's server: %s", a.name, c.name, group.bound())
			err = errors.Join(err, group.remove())
		}()
	}
	ctl, cand, err := startPair(ctx, o, a, c)
	for _, cl := range []*pgcluster.Cluster{ctl, cand} {
		if cl != nil {
			defer func() { err = errors.Join(err, cl.Stop()) }()
		}
	}
	if err != nil {
		return err
	}
	if c.memLimit {
		// The data is built without the limit, as a production copy
		// restored onto a smaller machine is: the build's own memory
		// (CREATE INDEX's maintenance_work_mem, the dirty pages of the
		// load) is not the application's.
		if err := checkDataSet(ctx, cand, a, o.memLimitMB); err != nil {
			return err
		}
		if err := cand.StopServer(); err != nil {
			return err
		}
		if err := group.limitMemory(int64(o.memLimitMB) << 20); err != nil {
			return err
		}
		if err := cand.StartServer(ctx); err != nil {
			return err
		}
	}
	snaps := make([]*pgcluster.Snapshot, 2)
	for i, cl := range []*pgcluster.Cluster{ctl, cand} {
		if snaps[i], err = cl.Snapshot(ctx); err != nil {
			return err
		}
	}
	scripts, err := scriptFiles(a, dir)
	if err != nil {
		return err
	}
	res := outcome{App: a.name, Change: c.name, About: c.about, Clients: o.clients, Threads: o.threads, Rate: o.rate, Duration: o.duration.String()}
	before := truthBefore(o.rounds, o.bracket)
	res.TruthBefore = before
	truth := func(from, to int) error {
		for i := from; i < to; i++ {
			// control, candidate, candidate, control, control, candidate...
			side := (i + i/2) % 2
			cl, name := ctl, sideControl
			if side == 1 {
				cl, name = cand, sideCand
			}
			say("%s %s: truth round %d of %d, %s", a.name, c.name, i+1, 2*o.rounds, name)
			r := appRun{clients: o.clients, threads: o.threads, rate: o.rate, duration: o.duration,
				logPrefix: filepath.Join(dir, "pgbench", fmt.Sprintf("round-%02d-%s", i+1, name))}
			rd, err := truthRound(ctx, cl, snaps[side], name, a, scripts, r)
			if err != nil {
				return err
			}
			res.Rounds = append(res.Rounds, rd)
		}
		return nil
	}
	if err := truth(0, before); err != nil {
		return err
	}
	for i, cl := range []*pgcluster.Cluster{ctl, cand} {
		if err := cl.Restore(ctx, snaps[i]); err != nil {
			return err
		}
		if !o.targetLogs {
			continue
		}
		if err := statementLog(ctx, cl); err != nil {
			return err
		}
	}
	say("%s %s: rehearsing production's log", a.name, c.name)
	res.Rehearse, res.ExitCode, err = runRehearse(ctx, o, a, dir, ctl, cand, prod.log)
	if err != nil {
		return err
	}
	// The rest of the truth from the snapshots again, taken before the
	// statement log was turned on: the application runs as it did.
	if err := truth(before, 2*o.rounds); err != nil {
		return err
	}
	if o.capacity {
		if res.Capacity, err = capacitySearch(ctx, o, a, c, dir, []*pgcluster.Cluster{ctl, cand}, snaps, scripts, prod.headroomLog); err != nil {
			return err
		}
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "result.json"), append(b, '\n'), 0o644)
}

// startPair starts the control and the candidate and builds their data,
// both at once, then makes the change on the candidate.
func startPair(ctx context.Context, o options, a *application, c change) (ctl, cand *pgcluster.Cluster, err error) {
	opts := []pgcluster.Options{{Settings: clusterSettings(nil), Keep: o.keep, BinDir: o.binDir}, {Settings: clusterSettings(c.settings), Keep: o.keep, BinDir: o.binDir}}
	if c.pg18 {
		// The control's default (15: off), as pg_upgrade keeps it.
		opts[1].BinDir, opts[1].Checksums = o.pg18Bin, pgcluster.ChecksumsOff
	}
	if o.candBinDir != "" {
		opts[1].BinDir = o.candBinDir
	}
	sqls := []string{"", c.sql[a.db]}
	clusters := make([]*pgcluster.Cluster, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if clusters[i], errs[i] = pgcluster.Start(ctx, opts[i]); errs[i] != nil {
				return
			}
			errs[i] = setup(ctx, clusters[i], a, sqls[i])
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil || !c.upgrade {
		return clusters[0], clusters[1], err
	}
	say("%s %s: pg_upgrade of the candidate's data to %s", a.name, c.name, o.upgradeBin)
	up, err := upgradeCandidate(ctx, clusters[1], o.upgradeBin, o.keep)
	if up == nil {
		return clusters[0], clusters[1], err
	}
	if err == nil {
		err = sayStatistics(ctx, up, a, c)
	}
	// Upgraded: the old candidate is gone (or its removal's error is
	// err), and the new one is stopped with the control.
	return clusters[0], up, err
}

// logsStatements says whether a new session on c logs every statement.
func logsStatements(ctx context.Context, c *pgcluster.Cluster) (bool, error) {
	cfg, err := pgconn.ParseConfig(c.DSN("postgres"))
	if err != nil {
		return false, err
	}
	// Not the workload: the analyses leave pgrehearse's own sessions out.
	cfg.RuntimeParams["application_name"] = event.OwnApplicationPrefix + "forecast"
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.Background())
	res, err := conn.Exec(ctx, "SHOW log_min_duration_statement").ReadAll()
	if err != nil {
		return false, err
	}
	return len(res) == 1 && len(res[0].Rows) == 1 && string(res[0].Rows[0][0]) == "0", nil
}

// truthBefore is how many of the truth's 2·rounds rounds run before the
// rehearsal: with bracket, half of them in whole pairs (the first even
// count at or above rounds), so that the rest, after it, are a balanced
// run of the same order; else all of them. The host's speed drifts over
// the minutes a change takes (the index lookup's time per call rose 20%
// over the truth's 20 rounds of one run, the seq scan's 5%, moving the
// ratio 160x to 139x): a truth measured wholly before the rehearsal is
// compared with a forecast measured later, under other conditions.
func truthBefore(rounds int, bracket bool) int {
	if !bracket {
		return 2 * rounds
	}
	return min(2*rounds, (rounds+1)/2*2)
}

// candidateCgroup makes the candidate's cgroup for c and the wrapped
// binaries that start its server in it, and sets o.candBinDir to them.
func candidateCgroup(o *options, a *application, c change) (*serverCgroup, error) {
	var cpus float64
	if c.cpuFraction > 0 {
		n, err := cpuCount(o.serverCPUs)
		if err != nil {
			return nil, err
		}
		cpus = c.cpuFraction * float64(n)
		say("%s %s: the control's server has %d CPUs, the candidate's a quota of %.2f", a.name, c.name, n, cpus)
	}
	prelude := ""
	if c.memLimit {
		prelude = dropCacheLines
	}
	g, err := newServerCgroup(fmt.Sprintf("pgrehearse-forecast-%d-%s-%s", os.Getpid(), a.name, c.name), cpus, c.memLimit)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.name, err)
	}
	base := ""
	if c.pg18 {
		base = o.pg18Bin
	}
	if o.candBinDir, err = wrappedBinaries(base, filepath.Join(o.out, "bin", a.name+"-"+c.name), g.shellLines()+prelude, o.serverCPUs); err != nil {
		return nil, errors.Join(err, g.remove())
	}
	return g, nil
}

// checkDataSet fails unless a's data set on c is larger than the memory
// limit of limitMB, and says both.
func checkDataSet(ctx context.Context, c *pgcluster.Cluster, a *application, limitMB int) error {
	conn, err := pgconn.Connect(ctx, c.DSN(a.db))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	res, err := conn.Exec(ctx, "SELECT pg_database_size(current_database())").ReadAll()
	if err != nil {
		return err
	}
	if len(res) != 1 || len(res[0].Rows) != 1 {
		return errors.New("pg_database_size: no row")
	}
	size, err := strconv.ParseInt(string(res[0].Rows[0][0]), 10, 64)
	if err != nil {
		return err
	}
	say("%s mem-limit: the data set is %d MB, the candidate's limit %d MB (shared_buffers, the backends and the page cache)", a.name, size>>20, limitMB)
	if size>>20 <= int64(limitMB) {
		return fmt.Errorf("%s's data set (%d MB) is not larger than -mem-limit (%d MB): raise -scale", a.name, size>>20, limitMB)
	}
	return nil
}

// sayStatistics says what planner statistics the upgraded candidate
// holds for a's tables: 18's pg_upgrade carries the tables' and columns'
// (pg_stats) but not the extended statistics, earlier ones none, and the
// cumulative statistics (n_live_tup, last_analyze) start empty.
func sayStatistics(ctx context.Context, cl *pgcluster.Cluster, a *application, c change) error {
	conn, err := pgconn.Connect(ctx, cl.DSN(a.db))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	res, err := conn.Exec(ctx, `SELECT current_setting('server_version'),
	count(*) FILTER (WHERE EXISTS (SELECT 1 FROM pg_stats s WHERE s.schemaname = t.schemaname AND s.tablename = t.relname)),
	count(*), count(*) FILTER (WHERE coalesce(t.last_analyze, t.last_autoanalyze) IS NOT NULL),
	(SELECT count(*) FROM pg_statistic_ext e WHERE NOT EXISTS (SELECT 1 FROM pg_stats_ext x WHERE x.statistics_name = e.stxname))
FROM pg_stat_user_tables t`).ReadAll()
	if err != nil {
		return err
	}
	if len(res) != 1 || len(res[0].Rows) != 1 {
		return errors.New("the upgraded candidate's statistics: no row")
	}
	r := res[0].Rows[0]
	say("%s %s: the candidate on %s after pg_upgrade: %s of %s tables with column statistics (pg_stats), %s analyzed as far as pg_stat_user_tables knows, %s extended statistics not computed",
		a.name, c.name, r[0], r[1], r[2], r[3], r[4])
	return nil
}
