package cli

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
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
// capture is replayed at speed 0 in answers mode (replay's default)
// onto a copy of the state before the run. At most 1% of the answers
// differ, none unexplained and none said to be the target's data, and
// each range read's answers explained as raced are no more than its
// calls that overlapped, in the capture's times, a commit of another
// session that wrote a row in their range (ranges of the primary key race
// by row; a point statement's race is
// by row, and one in a block also races when an earlier statement of
// its block did, or when its transaction's commit raced with another
// session's statement, which the capture's times alone do not tell). Onto a copy where a tenth of one table's
// rows hold other values, at least 90% of the extra differences are the
// target's data, that table named, and the replay exits 6. The same
// capture replayed in object mode is logged beside, for the record
// (docs/performance.md).
func TestCaptureAnswersOLTP(t *testing.T) {
	longCase(t)
	ctx := context.Background()
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{"max_connections": "60"}})
	setup := fmt.Sprintf(`CREATE TABLE items (id int PRIMARY KEY, v int NOT NULL);
INSERT INTO items SELECT g, g FROM generate_series(1, %[1]d) g;
CREATE TABLE stock (id int PRIMARY KEY, qty int NOT NULL);
INSERT INTO stock SELECT g, 100 FROM generate_series(1, %[1]d) g`, oltpKeys)
	for db, extra := range map[string]string{"orig": "", "copy": "", "objcopy": "", "skewed": "; UPDATE items SET v = v + 1000000 WHERE id % 10 = 0"} {
		mustExec(t, c, "postgres", "CREATE DATABASE "+db)
		mustExec(t, c, db, setup+extra)
	}
	rc := startCapture(t, c.DSN("orig"))
	const sessions, ops = 8, 400
	oltpCapture(ctx, t, rc, c.User(), sessions, ops)
	could := oltpCouldRace(captureEvents(t, rc.dir))

	began := time.Now()
	code, text, res := runReplay(t, "--target", c.DSN("copy"), "--database-map", "orig=copy", "--speed", "0", "--findings=false", rc.dir)
	took := time.Since(began)
	if res == nil {
		t.Fatalf("no result:\n%s", text)
	}
	if res.Sync == nil || res.Sync.Mode != results.SyncAnswers || !strings.Contains(text, "sync:       answers;") {
		t.Errorf("replay's default: sync %+v, want answers, named in the text:\n%s", res.Sync, text)
	}
	o := res.Outcomes
	if code != ExitOK || o.AnswerDiffers*100 > o.Answered || o.AnswerDiffersUnexplained != 0 || o.AnswerDiffersTargetData != 0 || res.Sync.Timeouts != 0 {
		t.Errorf("copy: exit %d, %d of %d answers differ (%v explained, %d unexplained, %d the target's data %v), %d sync timeouts: want exit 0, at most 1%%, none unexplained or the target's\n%s",
			code, o.AnswerDiffers, o.Answered, o.AnswerDiffersExplained, o.AnswerDiffersUnexplained, o.AnswerDiffersTargetData, o.AnswerDiffersTargetDataByTable, res.Sync.Timeouts, text)
	}
	for _, q := range res.Queries {
		if r := normalizedOLTP(q.Query); q.AnswerExplained == 0 || !strings.HasPrefix(q.AnswerCause, "raced") || r != oltpRange && r != oltpStock {
			continue
		}
		if n := could[normalizedOLTP(q.Query)]; q.AnswerExplained > n {
			t.Errorf("%q: %d answers explained as raced (%s), but only %d of its calls overlapped a commit of a row they read", q.Query, q.AnswerExplained, q.AnswerCause, n)
		}
	}
	t.Logf("answers: %d compared, %d differ %v, %s; %.2f s (%d statements); calls that could race %v", o.Answered, o.AnswerDiffers, o.AnswerDiffersExplained, oltpSyncSummary(res), took.Seconds(), res.Statements.Executed, could)

	began = time.Now()
	_, _, obj := runReplay(t, "--target", c.DSN("objcopy"), "--database-map", "orig=objcopy", "--speed", "0", "--sync", "object", "--findings=false", rc.dir)
	if obj != nil {
		t.Logf("object: %d compared, %d differ %v, %d unexplained, %d the target's data; %s; %.2f s", obj.Outcomes.Answered, obj.Outcomes.AnswerDiffers,
			obj.Outcomes.AnswerDiffersExplained, obj.Outcomes.AnswerDiffersUnexplained, obj.Outcomes.AnswerDiffersTargetData, oltpSyncSummary(obj), time.Since(began).Seconds())
	}

	code, text, skew := runReplay(t, "--target", c.DSN("skewed"), "--database-map", "orig=skewed", "--speed", "0", "--findings=false", rc.dir)
	if skew == nil {
		t.Fatalf("skewed: no result:\n%s", text)
	}
	so := skew.Outcomes
	extra := so.AnswerDiffers - o.AnswerDiffers
	named := so.AnswerDiffersTargetDataByTable["public.items"]
	// Every range read of items differs there: those that overlapped a
	// commit of a row in their range race (by row: ranges of the key
	// are bounded), the others are the target's data.
	if code != ExitDiverged || extra <= 0 || named*10 < extra*9 || so.AnswerDiffersTargetData != named || so.AnswerDiffersUnexplained != 0 {
		t.Errorf("skewed: exit %d, %d more answers differ, %d of them the target's data in public.items (%v), %d unexplained, explained %v: want exit %d, at least 90%% the target's data, only public.items named, none unexplained\n%s",
			code, extra, named, so.AnswerDiffersTargetDataByTable, so.AnswerDiffersUnexplained, so.AnswerDiffersExplained, ExitDiverged, text)
	}
	t.Logf("skewed: %d compared, %d differ (%d more), explained %v, the target's data %v (%.0f%% of the extra)", so.Answered, so.AnswerDiffers, extra,
		so.AnswerDiffersExplained, so.AnswerDiffersTargetDataByTable, 100*float64(named)/float64(max(extra, 1)))
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

// oltpCapture runs sessions oltpSessions of ops operations at once, as
// user, through the capture rc into its database orig, and stops the
// capture; an error of either fails the test.
func oltpCapture(ctx context.Context, t *testing.T, rc *runningCapture, user string, sessions, ops int) {
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

// oltpWrite is a committed write of the workload, from the capture: when
// the statement that committed it was sent and answered, its session,
// and the keys it wrote by table.
type oltpWrite struct {
	from, to int64
	session  string
	keys     map[string][]int64
}

// oltpCouldRace counts, by statement, the calls of the capture that
// overlapped in time (sent before the commit was answered, answered
// after it was sent) a commit of another session that wrote a row they
// read or write: for a range read, the only calls whose answers may
// differ by the order of the sessions.
func oltpCouldRace(evs []*event.Event) map[string]int64 {
	var writes []oltpWrite
	open := map[string]map[string][]int64{}
	type call struct {
		sql, session, table string
		from, to, lo, hi    int64
	}
	var calls []call
	for _, ev := range evs {
		if !ev.IsExecution() {
			continue
		}
		q := normalizedOLTP(ev.Query)
		from, to := ev.Time, ev.Time+max(ev.Duration, 0)
		p := ev.TextParams()
		arg := func(i int) int64 {
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
		switch q {
		case oltpRange, oltpStock:
			table := "items"
			if q == oltpStock {
				table = "stock"
			}
			calls = append(calls, call{q, ev.Session, table, from, to, arg(0), arg(1)})
		case oltpUpdate:
			calls = append(calls, call{q, ev.Session, "items", from, to, arg(0), arg(0)})
			if !ev.Failed {
				writes = append(writes, oltpWrite{from, to, ev.Session, map[string][]int64{"items": {arg(0)}}})
			}
		case oltpDelete, oltpReinsert, oltpMoveItem, oltpMoveQty:
			table := "stock"
			if q == oltpMoveItem {
				table = "items"
			}
			calls = append(calls, call{q, ev.Session, table, from, to, arg(0), arg(0)})
			if open[ev.Session] == nil {
				open[ev.Session] = map[string][]int64{}
			}
			open[ev.Session][table] = append(open[ev.Session][table], arg(0))
		default:
			switch strings.ToUpper(strings.TrimSpace(ev.Query)) {
			case "COMMIT":
				if w := open[ev.Session]; w != nil {
					writes = append(writes, oltpWrite{from, to, ev.Session, w})
				}
				delete(open, ev.Session)
			case "ROLLBACK":
				delete(open, ev.Session)
			}
		}
	}
	n := map[string]int64{}
	for _, cl := range calls {
		for _, w := range writes {
			if w.session == cl.session || w.to <= cl.from || w.from > cl.to {
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

// slicesAnyIn reports whether a key of keys is in [lo, hi].
func slicesAnyIn(keys []int64, lo, hi int64) bool {
	for _, k := range keys {
		if k >= lo && k <= hi {
			return true
		}
	}
	return false
}
