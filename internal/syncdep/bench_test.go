package syncdep

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
)

// BenchmarkEvent is the tracker's cost per execution event on
// pgbench-style transactions (BEGIN, UPDATE, SELECT, INSERT, END) of 8
// sessions on tables of their own: Event on the reader's side, Blocker
// and Done on the sessions'. The replayer spends some 15 µs of CPU per
// statement at speed 0; this is what synchronization adds to it.
func BenchmarkEvent(b *testing.B) {
	for _, mode := range []Mode{Object, Answers} {
		b.Run(mode.String(), func(b *testing.B) { benchmarkEvent(b, mode) })
	}
}

// benchmarkEvent is BenchmarkEvent in one mode; in Answers mode each
// statement's mark is done as it is read (its session ran it).
func benchmarkEvent(b *testing.B, mode Mode) {
	const sessions = 8
	cat := &Catalog{}
	for i := range sessions {
		cat.Relations = append(cat.Relations,
			Relation{OID: uint32(2*i + 1), Schema: "public", Name: fmt.Sprintf("acct_%d", i), Kind: 'r'},
			Relation{OID: uint32(2*i + 2), Schema: "public", Name: fmt.Sprintf("hist_%d", i), Kind: 'r'})
	}
	tr := NewTracker(mode)
	tr.SetCatalog("db", cat)
	c := fingerprint.NewCache(0)
	var ss []*Session
	var texts [][]string
	for i := range sessions {
		ss = append(ss, tr.Session("db", i))
		texts = append(texts, []string{"BEGIN",
			fmt.Sprintf("UPDATE acct_%d SET abalance = abalance + 5 WHERE aid = 7", i),
			fmt.Sprintf("SELECT abalance FROM acct_%d WHERE aid = 7", i),
			fmt.Sprintf("INSERT INTO hist_%d (aid, delta, mtime) VALUES (7, 5, CURRENT_TIMESTAMP)", i),
			"END"})
	}
	// Items as the replay has them, from the fingerprint cache.
	items := make([][][]fingerprint.Item, sessions)
	for i := range sessions {
		for _, t := range texts[i] {
			items[i] = append(items[i], c.Get(t))
		}
	}
	var pending []*Txn
	b.ResetTimer()
	for n := range b.N {
		i, k := (n/5)%sessions, n%5
		at := ms(int64(n))
		st := ss[i].Event(Exec{Start: at - 100, End: at, Items: items[i][k], Text: texts[i][k]})
		if tx := tr.board.Blocker(st.Wait); tx != nil && len(pending) > 64 {
			b.Fatalf("blocked by %v", tx.Owner())
		}
		if st.Mark != nil {
			st.Mark.Done()
		}
		if st.Commit != nil {
			pending = append(pending, st.Commit)
		}
		if len(pending) > 16 {
			// Commits run on the target a little later.
			pending[0].Done()
			pending = pending[1:]
		}
	}
}

// BenchmarkBoardDone is the board's cost per commit as a speed-0 replay
// of pgbench tpcb-like traffic gives it: every transaction writes the
// same three tables, the dispatcher keeps a window of commits ahead of
// the sessions, and the sessions run them nearly, not exactly, in the
// log's order (each of 8 windows of commits is done in an order of its
// own). It times add, Blocker and Done.
func BenchmarkBoardDone(b *testing.B) {
	const window = 256
	shuffle := [8]int{3, 0, 5, 1, 7, 2, 6, 4}
	b.ReportAllocs()
	bd := newBoard()
	var txs []*Txn
	seq := uint64(0)
	w := Wait{eff: &effect{touch: []uint32{0, 1, 2}}}
	for b.Loop() {
		for len(txs) < window {
			seq++
			t := &Txn{b: bd, seq: seq, writes: []uint32{0, 1, 2}}
			bd.add(t)
			txs = append(txs, t)
		}
		for _, k := range shuffle {
			txs[k].Done()
		}
		w.cut = seq
		_ = bd.Blocker(w)
		txs = txs[len(shuffle):]
	}
}

// BenchmarkEventByRow is BenchmarkEvent on pgbench's own tpcb-like
// transactions, as a `-M prepared` log gives them: tables keyed by their
// primary key, every key a bind parameter, 8 sessions sharing one branch,
// ten tellers and 100,000 accounts. It is the dispatcher's tracking of a
// speed-0 replay ordered by row; ns/op is per execution event.
func BenchmarkEventByRow(b *testing.B) {
	const sessions = 8
	cat := &Catalog{}
	for i, name := range []string{"pgbench_accounts", "pgbench_tellers", "pgbench_branches", "pgbench_history"} {
		cat.Relations = append(cat.Relations, Relation{OID: uint32(i + 1), Schema: "public", Name: name, Kind: 'r'})
	}
	for i, col := range []string{"aid", "tid", "bid"} {
		cat.Indexes = append(cat.Indexes, Index{Rel: uint32(i + 1), Primary: true, Columns: []IndexColumn{{Name: col, Type: 23, Deterministic: true}}})
	}
	tr := NewTracker(Object)
	tr.SetCatalog("db", cat)
	c := fingerprint.NewCache(0)
	texts := []string{"BEGIN",
		"UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
		"SELECT abalance FROM pgbench_accounts WHERE aid = $1",
		"UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2",
		"UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2",
		"INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)",
		"END"}
	items := make([][]fingerprint.Item, len(texts))
	for k, t := range texts {
		items[k] = c.Get(t)
	}
	// Parameters of 1,000 transactions, as logged.
	rng := rand.New(rand.NewPCG(1, 2))
	type txParams struct{ aid, tid, delta []event.Param }
	txs := make([]txParams, 1000)
	for i := range txs {
		p := func(v int) event.Param { return event.Param{Value: strconv.Itoa(v)} }
		aid, tid, delta := p(rng.IntN(100_000)+1), p(rng.IntN(10)+1), p(rng.IntN(10_001)-5_000)
		txs[i] = txParams{aid: []event.Param{aid}, tid: []event.Param{delta, tid}, delta: []event.Param{delta, aid}}
	}
	bid := []event.Param{{Value: "-3"}, {Value: "1"}}
	hist := []event.Param{{Value: "3"}, {Value: "1"}, {Value: "7"}, {Value: "-3"}}
	var ss []*Session
	for i := range sessions {
		ss = append(ss, tr.Session("db", i))
	}
	var pending []*Txn
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		tx, k := n/len(texts), n%len(texts)
		i, p := tx%sessions, txs[tx%len(txs)]
		var params []event.Param
		switch k {
		case 1:
			params = p.delta
		case 2:
			params = p.aid
		case 3:
			params = p.tid
		case 4:
			params = bid
		case 5:
			params = hist
		}
		at := ms(int64(n))
		st := ss[i].Event(Exec{Start: at - 100, End: at, Items: items[k], Text: texts[k], Params: params})
		if (k >= 1 && k <= 4) != (st.Rows == RowsByKey) {
			b.Fatalf("%s: %v", texts[k], st.Rows)
		}
		_ = tr.board.Blocker(st.Wait)
		if st.Commit != nil {
			pending = append(pending, st.Commit)
		}
		if len(pending) > 16 {
			// Commits run on the target a little later.
			pending[0].Done()
			pending = pending[1:]
		}
		n++
	}
}
