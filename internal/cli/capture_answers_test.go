package cli

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// The statements of the OLTP workload of TestCaptureAnswersOLTP.
const (
	oltpKeys     = 5000
	oltpSpan     = 100 // keys a range read reads
	oltpRange    = "SELECT id, v FROM items WHERE id BETWEEN $1 AND $2 ORDER BY id"
	oltpStock    = "SELECT id, qty FROM stock WHERE id BETWEEN $1 AND $2 ORDER BY id"
	oltpUpdate   = "UPDATE items SET v = v + 1 WHERE id = $1"
	oltpDelete   = "DELETE FROM stock WHERE id = $1"
	oltpReinsert = "INSERT INTO stock (id, qty) VALUES ($1, $2)"
	oltpMoveItem = "UPDATE items SET v = v - 1 WHERE id = $1"
	oltpMoveQty  = "UPDATE stock SET qty = qty + 1 WHERE id = $1"
)

// TestCaptureAnswersOLTP is issue 59's first acceptance workload: eight
// pgx sessions through the proxy update rows by key, delete and
// re-insert them, and read ranges of 100 keys, over two tables; the
// capture is replayed in answers mode (replay's default) at speed 0 and
// at speed 1, each onto a copy of the state before the run. At most 1%
// of the answers differ, none unexplained and none said to be the
// target's data; each range read's answers explained as raced are no
// more than its calls that overlapped, in the capture's times, a commit
// of another session that wrote a row in their range; and each answer
// explained as raced (by row), kept with --keep-answers, has a race in
// the capture (oltpRaceFounded): a transaction of another session that
// wrote a row it reads or writes ended inside its interval, or its own
// transaction ended inside the interval of another session's statement
// on a row it wrote, or an earlier statement of its block raced. Onto a
// copy where a tenth of one table's rows hold other values, at each
// speed, at least 90% of the extra differences are the target's data,
// that table named, and the replay exits 6. The same capture replayed in
// object mode is logged beside, for the record (docs/performance.md).
func TestCaptureAnswersOLTP(t *testing.T) {
	longCase(t)
	ctx := context.Background()
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{"max_connections": "60"}})
	setup := fmt.Sprintf(`CREATE TABLE items (id int PRIMARY KEY, v int NOT NULL);
INSERT INTO items SELECT g, g FROM generate_series(1, %[1]d) g;
CREATE TABLE stock (id int PRIMARY KEY, qty int NOT NULL);
INSERT INTO stock SELECT g, 100 FROM generate_series(1, %[1]d) g`, oltpKeys)
	skew := "; UPDATE items SET v = v + 1000000 WHERE id % 10 = 0"
	for db, extra := range map[string]string{"orig": "", "copy": "", "copy1": "", "objcopy": "", "skewed": skew, "skewed1": skew} {
		mustExec(t, c, "postgres", "CREATE DATABASE "+db)
		mustExec(t, c, db, setup+extra)
	}
	rc := startCapture(t, c.DSN("orig"))
	const sessions, ops = 8, 400
	runOLTPCapture(ctx, t, rc, c.User(), sessions, ops)
	evs := captureEvents(t, rc.dir)
	could := oltpCouldRace(evs)
	stmts, writes := oltpCapture(evs)

	o := oltpIdentical(t, c, rc.dir, "copy", "0", could, stmts, writes)
	o1 := oltpIdentical(t, c, rc.dir, "copy1", "1", could, stmts, writes)

	began := time.Now()
	_, _, obj := runReplay(t, "--target", c.DSN("objcopy"), "--database-map", "orig=objcopy", "--speed", "0", "--sync", "object", "--findings=false", rc.dir)
	if obj != nil {
		t.Logf("object: %d compared, %d differ %v, %d unexplained, %d the target's data; %s; %.2f s", obj.Outcomes.Answered, obj.Outcomes.AnswerDiffers,
			obj.Outcomes.AnswerDiffersExplained, obj.Outcomes.AnswerDiffersUnexplained, obj.Outcomes.AnswerDiffersTargetData, oltpSyncSummary(obj), time.Since(began).Seconds())
	}

	oltpSkewed(t, c, rc.dir, "skewed", "0", o, stmts, writes)
	oltpSkewed(t, c, rc.dir, "skewed1", "1", o1, stmts, writes)
}

// oltpIdentical replays the capture in dir at speed onto db, a copy of
// the state before the run (TestCaptureAnswersOLTP): at most 1% of the
// answers differ, none unexplained and none said to be the target's data,
// each query's answers raced no more than its calls that could (could),
// and each raced answer with a race in the capture (oltpRaceFounded).
func oltpIdentical(t *testing.T, c *pgcluster.Cluster, dir, db, speed string, could map[string]int64, stmts []oltpStmt, writes []*oltpWrite) results.Outcomes {
	t.Helper()
	began := time.Now()
	code, text, res := runReplay(t, "--target", c.DSN(db), "--database-map", "orig="+db, "--speed", speed, "--findings=false", "--keep-answers", dir)
	took := time.Since(began)
	if res == nil {
		t.Fatalf("%s: no result:\n%s", db, text)
	}
	if res.Sync == nil || res.Sync.Mode != results.SyncAnswers || !strings.Contains(text, "sync:       answers;") {
		t.Errorf("replay's default: sync %+v, want answers, named in the text:\n%s", res.Sync, text)
	}
	o := res.Outcomes
	if code != ExitOK || o.AnswerDiffers*100 > o.Answered || o.AnswerDiffersUnexplained != 0 || o.AnswerDiffersTargetData != 0 || res.Sync.Timeouts != 0 {
		t.Errorf("%s at speed %s: exit %d, %d of %d answers differ (%v explained, %d unexplained, %d the target's data %v), %d sync timeouts: want exit 0, at most 1%%, none unexplained or the target's\n%s",
			db, speed, code, o.AnswerDiffers, o.Answered, o.AnswerDiffersExplained, o.AnswerDiffersUnexplained, o.AnswerDiffersTargetData, o.AnswerDiffersTargetDataByTable, res.Sync.Timeouts, text)
		oltpLogBlamed(t, res, stmts, writes)
	}
	for _, q := range res.Queries {
		if r := normalizedOLTP(q.Query); q.AnswerExplained == 0 || !strings.HasPrefix(q.AnswerCause, "raced") || r != oltpRange && r != oltpStock {
			continue
		}
		if n := could[normalizedOLTP(q.Query)]; q.AnswerExplained > n {
			t.Errorf("%q: %d answers explained as raced (%s), but only %d of its calls overlapped a commit of a row they read", q.Query, q.AnswerExplained, q.AnswerCause, n)
		}
	}
	unfounded, checked, byRollback := oltpUnfoundedRaces(res, stmts, writes)
	for _, u := range unfounded {
		t.Errorf("%s at speed %s: raced, but the capture shows no transaction of another session that wrote a row it read and ended inside its interval: %s", db, speed, u)
	}
	t.Logf("%s at speed %s (load %s): %d compared, %d differ (%.2f%%) %v, %d unexplained, %d the target's data, %d raced each checked in the capture (%d by a rollback only); %s; %.2f s (%d statements); calls that could race %v",
		db, speed, loadAvg(), o.Answered, o.AnswerDiffers, 100*float64(o.AnswerDiffers)/float64(max(o.Answered, 1)), o.AnswerDiffersExplained, o.AnswerDiffersUnexplained, o.AnswerDiffersTargetData,
		checked, byRollback, oltpSyncSummary(res), took.Seconds(), res.Statements.Executed, could)
	return o
}

// oltpSkewed replays the capture in dir at speed onto db, a copy where a
// tenth of items' rows hold other values: at least 90% of the answers
// that differ beyond those of the identical copy's replay (o) are the
// target's data, in public.items only, none unexplained, exit 6; and
// each raced answer has a race in the capture.
func oltpSkewed(t *testing.T, c *pgcluster.Cluster, dir, db, speed string, o results.Outcomes, stmts []oltpStmt, writes []*oltpWrite) {
	t.Helper()
	code, text, skew := runReplay(t, "--target", c.DSN(db), "--database-map", "orig="+db, "--speed", speed, "--findings=false", "--keep-answers", dir)
	if skew == nil {
		t.Fatalf("%s: no result:\n%s", db, text)
	}
	so := skew.Outcomes
	extra := so.AnswerDiffers - o.AnswerDiffers
	named := so.AnswerDiffersTargetDataByTable["public.items"] + so.AnswerDiffersSuspectByTable["public.items"]
	// Every range read of items differs there: those that overlapped a
	// commit of a row in their range race (by row: ranges of the key
	// are bounded), the others are the target's data, proven where the
	// same rows were read differently more than once, suspect where once
	// (issue 77: 111 of 781 recurred, 2026-11-28); some recur, so exit 6.
	if code != ExitDiverged || extra <= 0 || named*10 < extra*9 || so.AnswerDiffersTargetData+so.AnswerDiffersSuspect != named ||
		so.AnswerDiffersTargetData == 0 || so.AnswerDiffersUnexplained != 0 {
		t.Errorf("%s at speed %s: exit %d, %d more answers differ, %d of them the target's data in public.items (%v), %d unexplained, explained %v: want exit %d, at least 90%% the target's data, only public.items named, none unexplained\n%s",
			db, speed, code, extra, named, so.AnswerDiffersTargetDataByTable, so.AnswerDiffersUnexplained, so.AnswerDiffersExplained, ExitDiverged, text)
	}
	unfounded, checked, byRollback := oltpUnfoundedRaces(skew, stmts, writes)
	for _, u := range unfounded {
		t.Errorf("%s at speed %s: raced, but the capture shows no transaction of another session that wrote a row it read and ended inside its interval: %s", db, speed, u)
	}
	t.Logf("%s at speed %s (load %s): %d compared, %d differ (%d more), explained %v, the target's data %v (%.0f%% of the extra), %d raced each checked in the capture (%d by a rollback only)", db, speed, loadAvg(), so.Answered, so.AnswerDiffers, extra,
		so.AnswerDiffersExplained, so.AnswerDiffersTargetDataByTable, 100*float64(named)/float64(max(extra, 1)), checked, byRollback)
}

// oltpLogBlamed logs, of a replay onto an identical copy, each answer
// blamed on the target's data, with the capture's transactions of other
// sessions that wrote a row it reads around it: what to look at when one
// is (a false alarm).
func oltpLogBlamed(t *testing.T, res *results.Result, stmts []oltpStmt, writes []*oltpWrite) {
	t.Helper()
	for _, a := range res.DifferingAnswers {
		if a.Cause != querystats.CauseTargetData {
			continue
		}
		for _, st := range stmts {
			if st.session != a.Session || st.from != a.TimeUS {
				continue
			}
			t.Logf("blamed on the data: session %s %q [%d, %d] %s %d-%d (%s)", st.session, st.sql, st.from, st.to, st.table, st.lo, st.hi, a.Diff)
			for _, w := range writes {
				if slicesAnyIn(w.keys[st.table], st.lo, st.hi) && w.to > st.from-200000 && w.from < st.to+200000 {
					t.Logf("  txn of session %s [%d, %d] (%+d us from its send) committed %v wrote %v", w.session, w.from, w.to, w.to-st.from, w.committed, w.keys)
				}
			}
		}
	}
}

// loadAvg is the machine's load averages, for the log.
func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(strings.Fields(string(b))[:min(3, len(strings.Fields(string(b))))], " ")
}

// oltpSyncSummary is a result's sync waits in a few words.
func oltpSyncSummary(res *results.Result) string {
	if res.Sync == nil {
		return "no sync"
	}
	s := fmt.Sprintf("%s: %d waited, %d timeouts, %d deadlocks", res.Sync.Mode, res.Sync.Waited, res.Sync.Timeouts, res.Sync.Deadlocks)
	if res.SyncWait != nil {
		s += fmt.Sprintf(", %.0f ms in all", res.SyncWait.TotalMS)
	}
	return s
}

// runOLTPCapture runs sessions oltpSessions of ops operations at once, as
// user, through the capture rc into its database orig, and stops the
// capture; an error of either fails the test.
func runOLTPCapture(ctx context.Context, t *testing.T, rc *runningCapture, user string, sessions, ops int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := range sessions {
		wg.Go(func() {
			if err := oltpSession(ctx, rc.dsn(user, "orig"), uint64(i), ops); err != nil {
				errs <- err
			}
		})
	}
	waitErrs(t, &wg, errs)
	rc.stopOK(t)
}

// oltpSession runs one session of the workload: ops transactions, each
// one of an update by key, a delete and re-insert, a range read of each
// table, a move between the two.
func oltpSession(ctx context.Context, dsn string, seed uint64, ops int) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	rnd := rand.New(rand.NewPCG(seed, 59))
	key := func() int32 { return int32(1 + rnd.IntN(oltpKeys)) }
	read := func(sql string) error {
		lo := int32(1 + rnd.IntN(oltpKeys-oltpSpan))
		rows, err := conn.Query(ctx, sql, lo, lo+oltpSpan-1)
		if err != nil {
			return err
		}
		rows.Close()
		return rows.Err()
	}
	for range ops {
		var err error
		switch p := rnd.IntN(100); {
		case p < 30:
			_, err = conn.Exec(ctx, oltpUpdate, key())
		case p < 50:
			k := key()
			err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, oltpDelete, k); err != nil {
					return err
				}
				// The value the row had at the start: two moves of
				// one row race (the second's DELETE finds none, its
				// INSERT a duplicate key, in an order the replay
				// may not keep), and one that left another value
				// would be read later as the target's data, since
				// the replay does not follow what a race changed
				// (issue 59, still open; docs/performance.md).
				_, err := tx.Exec(ctx, oltpReinsert, k, int32(100))
				return err
			})
			err = dupKeyOK(err)
		case p < 75:
			err = read(oltpRange)
		case p < 90:
			err = read(oltpStock)
		default:
			a, b := key(), key()
			err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, oltpMoveItem, a); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, oltpMoveQty, b)
				return err
			})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// dupKeyOK is err but for a duplicate key: two sessions moving one row
// at once, the second's DELETE finds none and its INSERT the first's.
func dupKeyOK(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return nil
	}
	return err
}

// normalizedOLTP is the workload's statement a query row names.
func normalizedOLTP(q string) string {
	for _, s := range []string{oltpRange, oltpStock, oltpUpdate, oltpDelete, oltpReinsert, oltpMoveItem, oltpMoveQty} {
		if strings.EqualFold(strings.Join(strings.Fields(q), " "), s) {
			return s
		}
	}
	return q
}

// oltpWrite is a transaction of the workload that wrote, from the
// capture: when the statement that ended it (its COMMIT or ROLLBACK, or
// the autocommit write itself) was sent and answered, its session, the
// keys it wrote by table, and whether it committed.
type oltpWrite struct {
	from, to  int64
	session   string
	keys      map[string][]int64
	committed bool
}

// oltpStmt is an execution of the workload's statements in the capture:
// when it was sent and its answer ended, the table and keys it reads or
// writes ([lo, hi]), and the transaction it wrote in (nil for a read).
type oltpStmt struct {
	sql, session, table string
	from, to, lo, hi    int64
	txn                 *oltpWrite
}

// oltpCapture reads the workload's statements and transactions from a
// capture's events.
func oltpCapture(evs []*event.Event) ([]oltpStmt, []*oltpWrite) {
	var writes []*oltpWrite
	open := map[string]*oltpWrite{}
	var stmts []oltpStmt
	for _, ev := range evs {
		if !ev.IsExecution() {
			continue
		}
		q := normalizedOLTP(ev.Query)
		from, to := ev.Time, ev.Time+max(ev.Duration, 0)
		a := oltpArgs(ev)
		table := map[string]string{oltpRange: "items", oltpUpdate: "items", oltpMoveItem: "items", oltpStock: "stock", oltpDelete: "stock", oltpReinsert: "stock", oltpMoveQty: "stock"}[q]
		switch q {
		case oltpRange, oltpStock:
			stmts = append(stmts, oltpStmt{q, ev.Session, table, from, to, a(0), a(1), nil})
		case oltpUpdate:
			w := &oltpWrite{from, to, ev.Session, map[string][]int64{table: {a(0)}}, !ev.Failed}
			writes = append(writes, w)
			stmts = append(stmts, oltpStmt{q, ev.Session, table, from, to, a(0), a(0), w})
		case oltpDelete, oltpReinsert, oltpMoveItem, oltpMoveQty:
			w := open[ev.Session]
			if w == nil {
				w = &oltpWrite{session: ev.Session, keys: map[string][]int64{}}
				open[ev.Session] = w
			}
			w.keys[table] = append(w.keys[table], a(0))
			stmts = append(stmts, oltpStmt{q, ev.Session, table, from, to, a(0), a(0), w})
		default:
			if w := open[ev.Session]; w != nil {
				switch strings.ToUpper(strings.TrimSpace(ev.Query)) {
				case "COMMIT", "ROLLBACK":
					w.from, w.to, w.committed = from, to, strings.EqualFold(strings.TrimSpace(ev.Query), "COMMIT")
					writes = append(writes, w)
					delete(open, ev.Session)
				}
			}
		}
	}
	return stmts, writes
}

// oltpArgs reads the integer parameters of an execution of the
// workload: argument i, -1 when it has none.
func oltpArgs(ev *event.Event) func(int) int64 {
	p := ev.TextParams()
	return func(i int) int64 {
		if i >= len(p) {
			return -1
		}
		if v := p[i].Value; p[i].Binary && len(v) == 4 {
			// pgx sends an int4 in binary, its type left to the
			// server.
			return int64(int32(binary.BigEndian.Uint32([]byte(v))))
		}
		n, err := strconv.ParseInt(p[i].Value, 10, 64)
		if err != nil {
			return -1
		}
		return n
	}
}

// oltpCouldRace counts, by statement, the calls of the capture that
// overlapped in time (sent before the commit was answered, answered
// after it was sent) a commit of another session that wrote a row they
// read or write: for a range read, the only calls whose answers may
// differ by the order of the sessions.
func oltpCouldRace(evs []*event.Event) map[string]int64 {
	stmts, writes := oltpCapture(evs)
	n := map[string]int64{}
	for _, cl := range stmts {
		for _, w := range writes {
			if !w.committed || w.session == cl.session || w.to <= cl.from || w.from > cl.to {
				continue
			}
			if slicesAnyIn(w.keys[cl.table], cl.lo, cl.hi) {
				n[cl.sql]++
				break
			}
		}
	}
	return n
}

// oltpRaceFounded says why a statement the replay labelled raced (by
// row) could race, from the capture's times and the keys the
// transactions wrote; "" when nothing does. Either a transaction of
// another session that wrote a row the statement reads or writes ended
// inside the statement's interval, or the statement wrote in a
// transaction that ended inside the interval of another session's
// statement that read or wrote a row the transaction wrote (the replay
// may run that statement before the whole transaction, so every
// statement of it is raced: syncdep.Tracker.flagTxn); a statement that
// follows one of those in its block is raced too. The server ends a
// transaction somewhere between its COMMIT's send and its answer, which
// the proxy relays later still (syncdep's race.go): it ended inside a
// statement's interval when it may have, the two intervals overlapping
// (the COMMIT sent before the statement's answer ended, answered after
// the statement was sent).
func oltpRaceFounded(st oltpStmt, stmts []oltpStmt, writes []*oltpWrite) string {
	if why := oltpRaceBy(st, stmts, writes, true); why != "" {
		return why
	}
	return oltpRaceBy(st, stmts, writes, false)
}

// oltpRaceBy is oltpRaceFounded by transactions that committed (commits),
// or by any, a rollback included ("a rollback": the rows it wrote were
// locked until it ended, so a statement that waited for them ran after
// it, which the replay may not keep).
func oltpRaceBy(st oltpStmt, stmts []oltpStmt, writes []*oltpWrite, commits bool) string {
	during := func(w *oltpWrite, s oltpStmt) bool {
		return w.from <= s.to && w.to >= s.from && (w.committed || !commits)
	}
	end := map[bool]string{true: "a commit", false: "a rollback"}
	for _, w := range writes {
		if w.session != st.session && during(w, st) && slicesAnyIn(w.keys[st.table], st.lo, st.hi) {
			return fmt.Sprintf("%s of session %s at %d wrote %s %v", end[w.committed], w.session, w.to, st.table, w.keys[st.table])
		}
	}
	w := st.txn
	if w == nil {
		return ""
	}
	for _, o := range stmts {
		if o.session != st.session && during(w, o) && slicesAnyIn(w.keys[o.table], o.lo, o.hi) {
			return fmt.Sprintf("%s of its transaction at %d during session %s's %q", end[w.committed], w.to, o.session, o.sql)
		}
	}
	for _, o := range stmts {
		// An earlier statement of its block that raced.
		if o.txn == w && o.from < st.from {
			if why := oltpRaceBy(oltpStmt{o.sql, o.session, o.table, o.from, o.to, o.lo, o.hi, nil}, nil, writes, commits); why != "" {
				return "an earlier statement of its block: " + why
			}
		}
	}
	return ""
}

// oltpUnfoundedRaces are the differing answers of a replay (kept with
// --keep-answers) labelled raced by row for which the capture shows no
// race (oltpRaceFounded), described; how many were checked, and how many
// of those only a rollback founds.
func oltpUnfoundedRaces(res *results.Result, stmts []oltpStmt, writes []*oltpWrite) (bad []string, n, rolledBack int) {
	at := map[[2]string]int{}
	for i, st := range stmts {
		at[[2]string{st.session, strconv.FormatInt(st.from, 10)}] = i
	}
	for _, a := range res.DifferingAnswers {
		if a.Cause != querystats.CauseRaced {
			continue
		}
		n++
		i, ok := at[[2]string{a.Session, strconv.FormatInt(a.TimeUS, 10)}]
		if !ok {
			bad = append(bad, fmt.Sprintf("session %s at %d: not a statement of the workload in the capture", a.Session, a.TimeUS))
			continue
		}
		why := oltpRaceFounded(stmts[i], stmts, writes)
		if strings.Contains(why, "a rollback") {
			rolledBack++
		}
		if why == "" {
			st := stmts[i]
			bad = append(bad, fmt.Sprintf("session %s %q [%d, %d] keys %s %d-%d (%s)", st.session, st.sql, st.from, st.to, st.table, st.lo, st.hi, a.Diff))
		}
	}
	return bad, n, rolledBack
}

// slicesAnyIn reports whether a key of keys is in [lo, hi].
func slicesAnyIn(keys []int64, lo, hi int64) bool {
	for _, k := range keys {
		if k >= lo && k <= hi {
			return true
		}
	}
	return false
}
