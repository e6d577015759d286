package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// TestShardsAnswersEqualSingle is issue 77's second item with a
// coordination database: traffic like a capture of production (pgbench's
// tpcb-like and read mix, beside an application that creates its own
// table and reads what another of its sessions writes), captured through
// the proxy, replayed at the default sync mode (answers) and speed 0 onto
// a dump taken before the capture, once in one process and once in 3
// shard processes joined by --coord-dsn. Both must exit 0, the merged
// counts must equal the single process's, and so must the answers: every
// execution compared, none unexplained, none blamed on the target's
// data, as many suspect. A commit in one shard waits for the reads of
// other shards that ended before it in the original (their runs are
// published through the coordination database); without that, a read in
// one shard ran after a commit of another that it preceded and answered
// differently (docs/sharding.md). A run whose answers differ is tried
// again, twice: a race the replay cannot force (two statements that
// overlapped in the original) is not a failure; a gap in the order fails
// every try.
func TestShardsAnswersEqualSingle(t *testing.T) {
	longCase(t)
	ctx := context.Background()
	opts := pgcluster.Options{Settings: map[string]string{"max_connections": "80"}}
	src := pgclustertest.StartT(t, opts)
	dst := pgclustertest.StartT(t, opts)
	coord := startCoord(t)
	var lastErr string
	for try := 1; try <= 3; try++ {
		mustExec(t, src, "postgres", "DROP DATABASE IF EXISTS orig WITH (FORCE)", "CREATE DATABASE orig")
		loadPgbenchMix(t, src)
		dump := filepath.Join(t.TempDir(), "orig.dump")
		pgTool(t, src, "pg_dump", "-Fc", "-f", dump, src.DSN("orig"))
		rc := startCapture(t, src.DSN("orig"), "--monitor-dsn", src.DSN("orig"))
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		wg.Go(func() { runPgbenchMix(ctx, t, src, rc, try) })
		wg.Go(func() {
			if err := appSessions(ctx, rc.dsn(src.User(), "orig"), try); err != nil {
				errs <- err
			}
		})
		waitErrs(t, &wg, errs)
		rc.stopOK(t)
		restore := func(db string) {
			mustExec(t, dst, "postgres", "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)", "CREATE DATABASE "+db)
			pgTool(t, dst, "pg_restore", "--no-owner", "-d", dst.DSN(db), dump)
			mustExec(t, dst, db, "ANALYZE")
		}
		restore("one")
		code, text, one := runReplay(t, "--target", dst.DSN("one"), "--database-map", "orig=one", "--speed", "0", "--findings=false", rc.dir)
		if one == nil || code != ExitOK {
			t.Fatalf("try %d: the single process exited %d:\n%s", try, code, text)
		}
		restore("shards")
		dir := t.TempDir()
		ps := make([]*shardProc, 3)
		for k := range ps {
			ps[k] = startShard(t, k, dir, "--shards", "3", "--coord-dsn", coord, "--run-id", fmt.Sprintf("answers-%d", try),
				"--target", dst.DSN("shards"), "--database-map", "orig=shards", "--speed", "0", "--findings=false", rc.dir)
		}
		waitShards(t, ps, shardWait)
		exits := ""
		for _, p := range ps {
			if p.code != ExitOK {
				exits += fmt.Sprintf("shard %d exited %d:\n%s\n", p.k, p.code, p.out.String())
			}
		}
		mc, mtext, m := mergeShards(t, dir, ps)
		if mc != ExitOK && mc != ExitDiverged {
			t.Fatalf("try %d: merge exited %d:\n%s", try, mc, mtext)
		}
		// Counts: not a race; they must hold on every try.
		if a, b := one.Statements, m.Statements; a.Total != b.Total || a.Executed != b.Executed || a.Failed != b.Failed || a.SkippedTotal() != b.SkippedTotal() {
			t.Errorf("try %d: statements: single %+v, merged %+v", try, a, b)
		}
		if a, b := one.Sessions.Total, m.Sessions.Total; a != b || m.Sessions.ConnectFailed != 0 {
			t.Errorf("try %d: sessions: single %d, merged %d (%d could not connect)", try, a, b, m.Sessions.ConnectFailed)
		}
		if sy := m.Sync; sy == nil || sy.Mode != results.SyncAnswers || sy.Scope != results.SyncAcrossShards {
			t.Fatalf("try %d: merged sync %+v: want answers across shards", try, sy)
		}
		o, mo := one.Outcomes, m.Outcomes
		summary := func(name string, r *results.Result) string {
			o := r.Outcomes
			return fmt.Sprintf("%s: %d answered, %d differ (%d unexplained, %d the target's data, %d suspect, explained %v), %d failed only on the target; sync %d waited, %d timeouts %v, %d deadlocks",
				name, o.Answered, o.AnswerDiffers, o.AnswerDiffersUnexplained, o.AnswerDiffersTargetData, o.AnswerDiffersSuspect,
				o.AnswerDiffersExplained, o.FailedOnlyOnTarget, r.Sync.Waited, r.Sync.Timeouts, r.Sync.TimeoutsByCause, r.Sync.Deadlocks)
		}
		t.Logf("try %d (load %s)\n  %s\n  %s", try, loadAvg(), summary("single", one), summary("3 shards", m))
		if o.Answered == 0 || mo.Answered != o.Answered {
			t.Errorf("try %d: %d executions compared with their answer in one process, %d in the shards", try, o.Answered, mo.Answered)
		}
		bad := exits
		if mo.AnswerDiffersUnexplained != o.AnswerDiffersUnexplained || mo.AnswerDiffersTargetData != o.AnswerDiffersTargetData ||
			mo.AnswerDiffersSuspect != o.AnswerDiffersSuspect || mo.FailedOnlyOnTarget != o.FailedOnlyOnTarget {
			bad += fmt.Sprintf("the shards' answers are not one process's: %+v against %+v\n", mo, o)
		}
		if m.Sync.Timeouts != 0 {
			bad += fmt.Sprintf("%d sync waits given up at their timeout (%v)\n", m.Sync.Timeouts, m.Sync.TimeoutsByCause)
		}
		if bad == "" {
			return
		}
		lastErr = bad
		t.Logf("try %d: %s", try, bad)
	}
	t.Errorf("3 tries: %s", lastErr)
}

// appSessions is an application beside pgbench: a writer creates its
// own table and inserts and updates rows in it in short transactions; a
// reader, connected after the table exists, counts and sums them.
func appSessions(ctx context.Context, dsn string, seed int) error {
	w, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer w.Close(ctx)
	if _, err := w.Exec(ctx, "CREATE TABLE app_items (id int PRIMARY KEY, n int NOT NULL)"); err != nil {
		return err
	}
	r, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer r.Close(ctx)
	done := make(chan error, 1)
	go func() {
		for i := range 300 {
			var n, s int64
			if err := r.QueryRow(ctx, "SELECT count(*), coalesce(sum(n), 0) FROM app_items WHERE id <= $1", int32(1000)).Scan(&n, &s); err != nil {
				done <- err
				return
			}
			if _, err := r.Exec(ctx, "SELECT n FROM app_items WHERE id = $1", int32(i%50)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := range 300 {
		err := pgx.BeginFunc(ctx, w, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "INSERT INTO app_items VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET n = app_items.n + 1", int32((i*7+seed)%50), int32(i)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "UPDATE app_items SET n = n + 1 WHERE id = $1", int32(i%50))
			return err
		})
		if err != nil {
			return err
		}
	}
	return <-done
}

// waitShards waits for every shard of ps within d; past it, a stall, it
// has every shard show where its goroutines are (SIGQUIT) and fails with
// what each said before and the replay's frames of its goroutines.
func waitShards(t *testing.T, ps []*shardProc, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for _, p := range ps {
		select {
		case <-p.done:
			continue
		case <-deadline:
		}
		var b strings.Builder
		for _, q := range ps {
			select {
			case <-q.done:
				fmt.Fprintf(&b, "shard %d exited %d\n", q.k, q.code)
				continue
			default:
			}
			q.cmd.Process.Signal(syscall.SIGQUIT)
			<-q.done
			fmt.Fprintf(&b, "shard %d did not finish within %v:\n", q.k, d)
			for i, line := range strings.Split(q.out.String(), "\n") {
				if i < 12 || strings.Contains(line, "pgrehearse/internal/") && !strings.Contains(line, "/work/") {
					b.WriteString("  " + line + "\n")
				}
			}
		}
		t.Fatalf("the shards stalled:\n%s", b.String())
	}
}
