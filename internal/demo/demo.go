// Package demo sets up the demo's scenarios: three throwaway clusters
// with the same shop ("production", a control and a candidate with one
// deliberate change), production's traffic taken as a statement log or
// through a capture proxy, and the targets logging every statement, so
// that a rehearsal or a headroom search of that traffic can run. It also
// reads what the demo shows of a rehearsal's report.
package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// Prefix is the log_line_prefix of the demo's servers, passed on so
// that the demo does not depend on prefix detection.
const Prefix = workload.LogLinePrefix

// Change is a deliberate difference the candidate server can have.
type Change string

// The changes.
const (
	DropIndex          Change = "drop-index"
	SmallSharedBuffers Change = "small-shared-buffers"
	HotIndexChange     Change = "hot-index"
	Upgrade            Change = "upgrade"
	NoChange           Change = "none"
)

// Changes says what each change makes of the candidate.
var Changes = map[Change]string{
	DropIndex:          "the candidate lacks the index the lookup of customers by email uses",
	SmallSharedBuffers: "the candidate runs with shared_buffers = 128kB",
	HotIndexChange:     "the candidate has an index on pgbench_accounts (abalance), a column pgbench's updates set, so they are no longer HOT",
	Upgrade:            "the candidate runs another major version (--candidate-bin), with the same data",
	NoChange:           "the candidate is identical: the verdict should pass",
}

// FailOn is the demo's verdict rule: a query slower at p95 by half,
// or writing half as much WAL again per call, or dirtying half as many
// blocks again per call. An update no longer HOT dirties its index pages
// too: in a 4-second demo its blocks dirtied per call doubled while its
// WAL per call grew by less than the work floor (1 kB).
const FailOn = "p95>+50%,wal>+50%,dirtied>+50%"

// HotIndex is the index the hot-index change adds on the candidate.
const HotIndex = "pgbench_accounts_abalance"

// HeadroomMaxK is the largest load factor the demo's headroom tries.
const HeadroomMaxK = 8

// Options are a demo's scenario.
type Options struct {
	Change Change
	// ControlBin and CandidateBin are the binaries of production and
	// the control, and of the candidate: empty is the installed ones.
	ControlBin, CandidateBin string
	// Keep keeps the clusters' directories and logs.
	Keep bool
	// Duration and Rate are how long production's traffic runs, at
	// how many transactions a second; Capture how it is taken, into
	// CaptureFirst then CaptureDir with CaptureProxy.
	Duration                 time.Duration
	Rate                     int
	Capture                  Capture
	CaptureFirst, CaptureDir string
	// Say tells the user what happens; it may be called from several
	// goroutines at once.
	Say func(format string, args ...any)
}

// Stage is the demo's set: the clusters and production's traffic as
// taken (a stderr log, or a capture directory).
type Stage struct {
	Production, Control, Candidate *pgcluster.Cluster
	Traffic                        string
	clusters                       []*pgcluster.Cluster
	keep                           bool
	say                            func(string, ...any)
}

// Close stops the clusters (and says which are kept).
func (s *Stage) Close() error {
	var err error
	// The last started stops first.
	for i := len(s.clusters) - 1; i >= 0; i-- {
		if c := s.clusters[i]; c != nil {
			stopCluster(c, &err, s.say, s.keep)
		}
	}
	return err
}

// Set starts the three clusters with the shop's data and the change,
// runs production's traffic, and turns on the targets' statement logs:
// each round's server-side durations come from there. On an error the
// clusters started are stopped.
func Set(ctx context.Context, o Options) (st *Stage, err error) {
	say := o.Say
	settings, candSettings := Settings(o.Change)
	bins, majors, err := versions(o, say)
	if err != nil {
		return nil, err
	}
	checksums := demoChecksums(majors, say)
	say("starting three throwaway clusters: production, a control and a candidate (%s)", Changes[o.Change])
	names := []string{"production", "control", "candidate"}
	clusters := make([]*pgcluster.Cluster, len(names))
	startErr := EachAtOnce(len(names), func(i int) (err error) {
		s := settings
		if names[i] == "candidate" {
			s = candSettings
		}
		s = versionSettings(s, majors[names[i]])
		clusters[i], err = pgcluster.Start(ctx, pgcluster.Options{Settings: s, Keep: o.Keep, BinDir: bins[names[i]], Checksums: checksums[names[i]]})
		return err
	})
	st = &Stage{Production: clusters[0], Control: clusters[1], Candidate: clusters[2], clusters: clusters, keep: o.Keep, say: say}
	defer func() {
		if err != nil {
			err = errors.Join(err, st.Close())
			st = nil
		}
	}()
	if startErr != nil {
		return st, startErr
	}
	if err := setupShops(ctx, say, o.Change, clusters...); err != nil {
		return st, err
	}
	if st.Traffic, err = production(ctx, o, st.Production); err != nil {
		return st, err
	}
	for _, c := range []*pgcluster.Cluster{st.Control, st.Candidate} {
		if err := EnableStatementLog(ctx, c); err != nil {
			return st, err
		}
	}
	return st, nil
}

// production runs production's traffic, taken as o.Capture says, and
// returns where it is.
func production(ctx context.Context, o Options, prod *pgcluster.Cluster) (string, error) {
	if o.Capture == CaptureProxy {
		return captureShop(ctx, o, prod)
	}
	if err := EnableStatementLog(ctx, prod); err != nil {
		return "", err
	}
	o.Say("production traffic: pgbench -M prepared, %d transactions/s for %v", o.Rate, o.Duration)
	run, err := workload.RunShop(ctx, prod, o.Duration, o.Rate)
	if err != nil {
		return "", err
	}
	o.Say("production ran %d transactions", run.Transactions)
	return StoppedLog(prod)
}

// versions returns each cluster's bin directory and major version:
// production's and the control's from --control-bin, the candidate's
// from --candidate-bin (--control-bin's when not given). It says which
// versions run when they differ, and once what a version lacks that the
// demo's settings ask for.
func versions(f Options, say func(string, ...any)) (bins map[string]string, majors map[string]int, err error) {
	candBin := f.CandidateBin
	if candBin == "" {
		candBin = f.ControlBin
	}
	bins = map[string]string{"production": f.ControlBin, "control": f.ControlBin, "candidate": candBin}
	majors = map[string]int{}
	for _, name := range []string{"control", "candidate"} {
		if majors[name], err = pgcluster.MajorOf(bins[name]); err != nil {
			flag := map[string]string{"control": "--control-bin", "candidate": "--candidate-bin"}[name]
			return nil, nil, fmt.Errorf("%s: %w", flag, err)
		}
	}
	majors["production"] = majors["control"]
	ctl, cand := majors["control"], majors["candidate"]
	switch {
	case f.Change == Upgrade && ctl == cand:
		say("--change upgrade: the candidate's binaries are PostgreSQL %d, as the control's: the rehearsal compares the same version", cand)
	case ctl != cand:
		say("production and the control run PostgreSQL %d, the candidate PostgreSQL %d", ctl, cand)
	}
	if m := min(ctl, cand); m < 15 {
		// Said once: the demo reads the stderr log, and jsonlog is only
		// one of the formats written beside it.
		say("PostgreSQL %d has no jsonlog (from 15): its servers log stderr and csvlog", m)
	}
	return bins, majors, nil
}

// demoChecksums returns each cluster's data-checksum setting: initdb's
// default, except for a candidate of another major version than the
// control's, which gets the control's, as pg_upgrade requires (the old and
// new clusters must agree). PostgreSQL 18's initdb turns checksums on by
// default; left so, an 18 candidate of a 13 control WAL-logs the hint bits
// its reads set, and SELECTs write WAL on the candidate only: a difference
// that no upgrade makes. It says so when it chooses.
func demoChecksums(majors map[string]int, say func(string, ...any)) map[string]pgcluster.Checksums {
	ctl, cand := majors["control"], majors["candidate"]
	want := pgcluster.InitdbChecksums(ctl)
	if ctl == cand || pgcluster.InitdbChecksums(cand) == want {
		return map[string]pgcluster.Checksums{}
	}
	say("the candidate starts with data checksums %s, as the control's (PostgreSQL %d's default): pg_upgrade keeps the old cluster's setting", want, ctl)
	return map[string]pgcluster.Checksums{"candidate": want}
}

// versionSettings returns settings as PostgreSQL major takes them:
// log_destination without jsonlog before 15.
func versionSettings(settings map[string]string, major int) map[string]string {
	s := maps.Clone(settings)
	if major < 15 {
		var dests []string
		for _, d := range strings.Split(s["log_destination"], ",") {
			if d != "jsonlog" {
				dests = append(dests, d)
			}
		}
		s["log_destination"] = strings.Join(dests, ",")
	}
	return s
}

// Settings returns the production cluster's settings and the
// candidate's, which differ by change.
func Settings(change Change) (prod, cand map[string]string) {
	// Logging is off while the data is built, then turned on: the setup
	// is not traffic to rehearse, and both servers get it anyway.
	prod = workload.LogSettings()
	prod["log_line_prefix"] = Prefix
	prod["log_min_duration_statement"] = "-1"
	prod["log_connections"] = "off"
	prod["log_disconnections"] = "off"
	// Planning time is half of what a query costs the server; the
	// evidence shows it only when it is tracked.
	prod["pg_stat_statements.track_planning"] = "on"
	cand = maps.Clone(prod)
	if change == SmallSharedBuffers {
		cand["shared_buffers"] = "128kB"
	}
	return prod, cand
}

// setupShops builds the shop's data on every cluster, all at once
// (each build is one server's work, and the machine may have cores to
// spare), then makes the candidate's change (the last cluster's) when it
// is to the schema.
func setupShops(ctx context.Context, say func(string, ...any), change Change, clusters ...*pgcluster.Cluster) error {
	err := EachAtOnce(len(clusters), func(i int) error {
		c := clusters[i]
		say("building the shop's data in %s", c.Dir())
		if err := workload.SetupShop(ctx, c); err != nil {
			return fmt.Errorf("shop data: %w", err)
		}
		// The replay's observer reads per-query server figures from it.
		if err := c.Exec(ctx, workload.ShopDatabase, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
			return err
		}
		if change == HotIndexChange {
			// Room in each page for an updated row's new version, as
			// a table updated in place should have: at pgbench's
			// fillfactor of 100 its updates are rarely HOT anyway,
			// and an index on abalance would change little.
			for _, sql := range []string{"ALTER TABLE pgbench_accounts SET (fillfactor = 90)", "VACUUM FULL pgbench_accounts", "ANALYZE pgbench_accounts"} {
				if err := c.Exec(ctx, workload.ShopDatabase, sql); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	cand := clusters[len(clusters)-1]
	switch change {
	case DropIndex:
		return cand.Exec(ctx, workload.ShopDatabase, "DROP INDEX "+workload.ShopEmailIndex)
	case HotIndexChange:
		return cand.Exec(ctx, workload.ShopDatabase, "CREATE INDEX "+HotIndex+" ON pgbench_accounts (abalance)")
	}
	return nil
}

// EachAtOnce calls f(0) to f(n-1) each in its own goroutine and returns
// their errors joined once all have returned.
func EachAtOnce(n int, f func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// EnableStatementLog turns on the logging of every statement and session
// and waits until new sessions see it: the postmaster reloads its
// configuration on its own time, and a session forked before that would
// go unlogged.
func EnableStatementLog(ctx context.Context, c *pgcluster.Cluster) error {
	// ALTER SYSTEM cannot share a query string with other statements.
	for _, sql := range []string{"ALTER SYSTEM SET log_min_duration_statement = 0",
		"ALTER SYSTEM SET log_connections = on", "ALTER SYSTEM SET log_disconnections = on",
		"SELECT pg_reload_conf()"} {
		if err := c.Exec(ctx, "postgres", sql); err != nil {
			return err
		}
	}
	cfg, err := pgconn.ParseConfig(c.DSN("postgres"))
	if err != nil {
		return err
	}
	// The demo's own polls are not the workload (see
	// event.OwnApplicationPrefix): however many it takes, the analyses
	// leave them out.
	cfg.RuntimeParams["application_name"] = event.OwnApplicationPrefix + "demo"
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := pgconn.ConnectConfig(ctx, cfg)
		if err != nil {
			return err
		}
		res, err := conn.Exec(ctx, "SHOW log_min_duration_statement").ReadAll()
		conn.Close(ctx)
		if err != nil {
			return err
		}
		if len(res) == 1 && len(res[0].Rows) == 1 && string(res[0].Rows[0][0]) == "0" {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the server did not reload its configuration in 10 s")
		}
	}
}

// StoppedLog stops c's server, so that its log is complete, and returns
// its stderr log.
func StoppedLog(c *pgcluster.Cluster) (string, error) {
	// Connections closed just before (the replay's last sessions) may
	// still be ending in the server: a fast shutdown would make their
	// backends log FATAL 57P01, an error of the demo, not of the
	// candidate.
	if err := c.StopServerSmart(10 * time.Second); err != nil {
		return "", err
	}
	files, err := c.LogFiles("*.log")
	if err != nil {
		return "", err
	}
	if len(files) != 1 {
		return "", fmt.Errorf("want one stderr log in %s, found %d", c.LogDir(), len(files))
	}
	return files[0], nil
}

func stopCluster(c *pgcluster.Cluster, err *error, say func(string, ...any), keep bool) {
	if keep {
		say("kept %s", c.Dir())
	}
	if stopErr := c.Stop(); stopErr != nil {
		*err = errors.Join(*err, fmt.Errorf("stop the cluster: %w", stopErr))
	}
}

// Verdict reads the verdict line of a report's JSON.
func Verdict(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var r struct {
		Verdict struct {
			Line string `json:"line"`
		} `json:"verdict"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return r.Verdict.Line, nil
}

// LatencyNotJudged says whether the report at path judged no latency
// because a replay fell behind its schedule (and nothing else decided
// its verdict); false when it cannot be read.
func LatencyNotJudged(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var r struct {
		Verdict struct {
			Status           judge.VerdictStatus     `json:"status"`
			LatencyNotJudged *judge.LatencyNotJudged `json:"latency_not_judged"`
		} `json:"verdict"`
	}
	if json.Unmarshal(b, &r) != nil {
		return false
	}
	return r.Verdict.Status == judge.VerdictIncomplete && r.Verdict.LatencyNotJudged != nil &&
		r.Verdict.LatencyNotJudged.Reason == judge.NotJudgedReplayLagged
}
