package synthlog

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// RealisticPrefix is the log_line_prefix of the logs WriteRealistic
// produces: the one docs/analyze.md recommends.
const RealisticPrefix = "%m [%p] %q%u@%d/%a %c %e "

// WriteRealistic writes at least size bytes of a log shaped like a busy
// production server's, with what the benchmark log of Write lacks:
//
//   - thousands of sessions, a few hundred at a time, each connecting
//     ("connection received", "connection authorized"), running a few
//     dozen statements and disconnecting;
//   - log_statement = 'all' with log_duration = on: every statement on a
//     line of its own, its duration on a separate line after it, and the
//     parse and bind of each extended-protocol execution followed by a
//     duration line of their own;
//   - executions with long quoted parameters (JSON documents, text with
//     quotes doubled);
//   - autovacuum runs (multi-line reports) and checkpoints;
//   - several databases, users and applications, and some errors.
//
// It is deterministic, so runs compare.
func WriteRealistic(w io.Writer, size int64) error {
	return writeRealistic(w, size, 0, realGap, realPerSession)
}

// WriteRealisticFor writes the log of WriteRealistic until it covers d of
// log time, its lines gap apart on average (WriteRealistic's are
// realGap/2 apart: about 1,800 statements a second), its sessions
// running 10 to 10+perSession statements each (WriteRealistic's:
// realPerSession): a log of a given length, rate and session count, for
// a paced replay.
func WriteRealisticFor(w io.Writer, d, gap time.Duration, perSession int) error {
	return writeRealistic(w, math.MaxInt64, d.Microseconds(), max(2*gap.Microseconds(), 1), max(perSession, 1))
}

const (
	// realGap is twice the mean gap between two lines, in µs.
	realGap = 400
	// realPerSession is the spread of the statements a session runs.
	realPerSession = 60
)

func writeRealistic(w io.Writer, size, spanUS, gap int64, perSession int) error {
	b := bufio.NewWriterSize(w, 1<<20)
	cw := &countWriter{w: b}
	const start = 1795335062_000000
	g := &realGen{w: cw, r: rand.New(rand.NewPCG(12, 34)), nextPID: 20000, us: start, gap: gap, perSession: perSession}
	for cw.n < size && cw.err == nil && (spanUS == 0 || g.us-start < spanUS) {
		g.step()
	}
	if cw.err != nil {
		return cw.err
	}
	return b.Flush()
}

type realApp struct {
	user, db, app string
	stmts         []string
}

var realApps = []realApp{
	{"shop", "shop", "web", []string{
		"SELECT id, name, price, stock FROM items WHERE category_id = 17 ORDER BY price LIMIT 50",
		"SELECT o.id, o.total, o.created_at FROM orders o WHERE o.customer_id = 4242 ORDER BY o.created_at DESC LIMIT 20",
		"UPDATE carts SET updated_at = now() WHERE session_key = 'a94f0c2e-77b3-4b9b-9a52-2f3e0b1c7d55'",
		"BEGIN", "COMMIT",
	}},
	{"shop", "shop", "PostgreSQL JDBC Driver", []string{
		"SELECT c.id, c.email, c.name FROM customers c WHERE c.email = 'someone@example.com'",
		"BEGIN", "COMMIT",
	}},
	{"report", "analytics", "metabase", []string{
		"SELECT date_trunc('day', created_at) AS day, count(*), sum(total)\n\tFROM orders\n\tWHERE created_at >= now() - interval '30 days'\n\tGROUP BY 1\n\tORDER BY 1",
		"SELECT i.category_id, sum(l.qty * l.price) AS revenue FROM order_lines l JOIN items i ON i.id = l.item_id GROUP BY 1 ORDER BY 2 DESC",
	}},
	{"billing", "billing", "billing-worker", []string{
		"SELECT id, amount, currency FROM invoices WHERE status = 'due' AND due_date < now() FOR UPDATE SKIP LOCKED LIMIT 100",
		"BEGIN", "COMMIT",
	}},
}

// Extended-protocol statements, with the parameters each takes.
var realExecs = []struct {
	query  string
	params func(r *rand.Rand) string
}{
	{"INSERT INTO events (kind, payload, created_at) VALUES ($1, $2, now())", func(r *rand.Rand) string {
		return fmt.Sprintf("$1 = 'page_view', $2 = '{\"user_id\": %d, \"path\": \"/items/%d\", \"referrer\": \"https://www.example.com/search?q=red+shoes&page=%d\", \"agent\": \"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36\", \"note\": \"it''s fine\"}'",
			r.IntN(1000000), r.IntN(50000), r.IntN(20))
	}},
	{"UPDATE items SET stock = stock - $1 WHERE id = $2 AND stock >= $1", func(r *rand.Rand) string {
		return fmt.Sprintf("$1 = '%d', $2 = '%d'", 1+r.IntN(3), r.IntN(50000))
	}},
	{"SELECT id, name, price FROM items WHERE id = ANY($1::int[])", func(r *rand.Rand) string {
		var ids []string
		for range 10 + r.IntN(30) {
			ids = append(ids, strconv.Itoa(r.IntN(50000)))
		}
		return "$1 = '{" + strings.Join(ids, ",") + "}'"
	}},
	{"INSERT INTO audit_log (actor, action, details) VALUES ($1, $2, $3)", func(r *rand.Rand) string {
		return fmt.Sprintf("$1 = 'user-%d', $2 = 'update_profile', $3 = 'changed address from \"%d Main Street, Springfield\" to \"%d Elm Street, Shelbyville\"; phone from ''+1 555 %04d'' to ''+1 555 %04d'''",
			r.IntN(100000), r.IntN(999), r.IntN(999), r.IntN(10000), r.IntN(10000))
	}},
}

type realSession struct {
	pid     int
	id      string
	app     *realApp
	left    int
	started int64
	inTx    bool
}

type realGen struct {
	w        *countWriter
	r        *rand.Rand
	sessions []*realSession
	nextPID  int
	us       int64 // the clock, µs since the epoch
	gap      int64 // twice the mean gap between lines, µs
	// perSession is the spread of the statements a session runs.
	perSession int
	lines      int
}

func (g *realGen) ts() string {
	g.us += g.r.Int64N(g.gap)
	sec := g.us / 1e6
	return fmt.Sprintf("2026-11-22 %02d:%02d:%02d.%03d UTC", sec/3600%24, sec/60%60, sec%60, g.us/1000%1000)
}

func (g *realGen) pre(s *realSession) string {
	return fmt.Sprintf("%s [%d] %s@%s/%s %s 00000 ", g.ts(), s.pid, s.app.user, s.app.db, s.app.app, s.id)
}

func (g *realGen) step() {
	g.lines++
	switch {
	case g.lines%50000 == 0:
		g.checkpoint()
		return
	case g.lines%9000 == 0:
		g.autovacuum()
		return
	}
	// A few hundred sessions at a time, thousands over the log.
	if len(g.sessions) < 300 && (len(g.sessions) < 200 || g.r.IntN(4) == 0) {
		g.connect()
		return
	}
	i := g.r.IntN(len(g.sessions))
	s := g.sessions[i]
	if s.left <= 0 {
		g.disconnect(s)
		g.sessions[i] = g.sessions[len(g.sessions)-1]
		g.sessions = g.sessions[:len(g.sessions)-1]
		return
	}
	s.left--
	if g.r.IntN(3) == 0 {
		g.execute(s)
	} else {
		g.simple(s)
	}
}

func (g *realGen) connect() {
	pid := g.nextPID
	g.nextPID++
	app := &realApps[g.r.IntN(len(realApps))]
	s := &realSession{pid: pid, id: fmt.Sprintf("6571e2a3.%x", pid), app: app, left: 10 + g.r.IntN(g.perSession), started: g.us}
	host := fmt.Sprintf("10.0.%d.%d", g.r.IntN(8), 2+g.r.IntN(200))
	port := 30000 + g.r.IntN(30000)
	fmt.Fprintf(g.w, "%s [%d] [unknown]@[unknown]/[unknown] %s 00000 LOG:  connection received: host=%s port=%d\n", g.ts(), pid, s.id, host, port)
	fmt.Fprintf(g.w, "%s [%d] %s@%s/[unknown] %s 00000 LOG:  connection authorized: user=%s database=%s application_name=%s\n",
		g.ts(), pid, app.user, app.db, s.id, app.user, app.db, app.app)
	g.sessions = append(g.sessions, s)
}

func (g *realGen) disconnect(s *realSession) {
	d := (g.us - s.started) / 1000
	fmt.Fprintf(g.w, "%sLOG:  disconnection: session time: 0:%02d:%02d.%03d user=%s database=%s host=10.0.1.7 port=41234\n",
		g.pre(s), d/60000%60, d/1000%60, d%1000, s.app.user, s.app.db)
}

func (g *realGen) duration(s *realSession) {
	fmt.Fprintf(g.w, "%sLOG:  duration: %d.%03d ms\n", g.pre(s), g.r.IntN(3), g.r.IntN(1000))
}

func (g *realGen) simple(s *realSession) {
	q := s.app.stmts[g.r.IntN(len(s.app.stmts))]
	p := g.pre(s)
	fmt.Fprintf(g.w, "%sLOG:  statement: %s\n", p, q)
	if g.r.IntN(200) == 0 {
		fmt.Fprintf(g.w, "%sERROR:  canceling statement due to statement timeout\n%sSTATEMENT:  %s\n", p, p, q)
		return
	}
	g.duration(s)
}

func (g *realGen) execute(s *realSession) {
	x := realExecs[g.r.IntN(len(realExecs))]
	params := x.params(g.r)
	g.duration(s) // parse
	g.duration(s) // bind
	p := g.pre(s)
	fmt.Fprintf(g.w, "%sLOG:  execute <unnamed>: %s\n%sDETAIL:  parameters: %s\n", p, x.query, p, params)
	if g.r.IntN(300) == 0 {
		fmt.Fprintf(g.w, "%sERROR:  duplicate key value violates unique constraint \"events_pkey\"\n%sDETAIL:  Key (id)=(%d) already exists.\n%sSTATEMENT:  %s\n",
			p, p, g.r.IntN(1000000), p, x.query)
		return
	}
	g.duration(s)
}

func (g *realGen) checkpoint() {
	pid := 101
	fmt.Fprintf(g.w, "%s [%d] LOG:  checkpoint starting: time\n", g.ts(), pid)
	fmt.Fprintf(g.w, "%s [%d] LOG:  checkpoint complete: wrote %d buffers (%d.%d%%); 0 WAL file(s) added, 0 removed, %d recycled; write=%d.%03d s, sync=0.%03d s, total=%d.%03d s; sync files=%d, longest=0.%03d s, average=0.%03d s; distance=%d kB, estimate=%d kB\n",
		g.ts(), pid, g.r.IntN(20000), g.r.IntN(10), g.r.IntN(10), g.r.IntN(5), g.r.IntN(300), g.r.IntN(1000), g.r.IntN(1000), g.r.IntN(300), g.r.IntN(1000),
		g.r.IntN(200), g.r.IntN(1000), g.r.IntN(1000), g.r.IntN(500000), g.r.IntN(500000))
}

func (g *realGen) autovacuum() {
	pid := 30000 + g.r.IntN(10000)
	fmt.Fprintf(g.w, "%s [%d] LOG:  automatic vacuum of table \"shop.public.events\": index scans: 1\n"+
		"\tpages: 0 removed, %d remain, 0 skipped due to pins, 0 skipped frozen\n"+
		"\ttuples: %d removed, %d remain, 0 are dead but not yet removable, oldest xmin: %d\n"+
		"\tindex scan needed: %d pages from table (%d.%02d%% of total) had %d dead item identifiers removed\n"+
		"\tavg read rate: %d.%03d MB/s, avg write rate: %d.%03d MB/s\n"+
		"\tbuffer usage: %d hits, %d misses, %d dirtied\n"+
		"\tWAL usage: %d records, %d full page images, %d bytes\n"+
		"\tsystem usage: CPU: user: 0.%02d s, system: 0.%02d s, elapsed: %d.%02d s\n",
		g.ts(), pid, g.r.IntN(100000), g.r.IntN(10000), g.r.IntN(1000000), g.r.IntN(10000000), g.r.IntN(1000), g.r.IntN(10), g.r.IntN(100), g.r.IntN(10000),
		g.r.IntN(50), g.r.IntN(1000), g.r.IntN(50), g.r.IntN(1000), g.r.IntN(100000), g.r.IntN(1000), g.r.IntN(1000),
		g.r.IntN(100000), g.r.IntN(1000), g.r.IntN(10000000), g.r.IntN(100), g.r.IntN(100), g.r.IntN(10), g.r.IntN(100))
	fmt.Fprintf(g.w, "%s [%d] LOG:  automatic analyze of table \"shop.public.events\"\n\tsystem usage: CPU: user: 0.%02d s, system: 0.%02d s, elapsed: 0.%02d s\n",
		g.ts(), pid, g.r.IntN(100), g.r.IntN(100), g.r.IntN(100))
}
