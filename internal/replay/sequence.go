package replay

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/rowdigest"
)

// seqColumnsQuery lists the columns of a database's tables that a
// sequence fills when a row gives them no value: identity columns and
// those whose default calls nextval (serial, bigserial), with whether
// the table is visible in the search path (for statements that do not
// name its schema).
const seqColumnsQuery = `SELECT n.nspname, c.relname, a.attname, pg_catalog.pg_table_is_visible(c.oid)
FROM pg_catalog.pg_attribute a
JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attnum > 0 AND NOT a.attisdropped AND c.relkind IN ('r', 'p')
  AND (a.attidentity <> '' OR pg_catalog.pg_get_expr(d.adbin, d.adrelid) LIKE 'nextval(%')`

// seqTimeout bounds the read of a database's sequence-filled columns.
const seqTimeout = 10 * time.Second

// seqColumns are the columns a sequence fills, by table: each under its
// schema-qualified name and, when the search path finds it, under its
// bare name (Schema "").
type seqColumns map[fingerprint.Name][]string

// seqCatalogs keeps the sequence-filled columns of each database the
// replay read them of: read when a statement of the database first
// returns such a value that differs from the original's, and read again
// when one returns from a table the last read did not have (a table the
// replay created since), once per such table.
type seqCatalogs struct {
	mu  sync.Mutex
	dbs map[string]*seqDB
}

type seqDB struct {
	// snap is the last read, nil before the first; sessions take it
	// without blocking. loadMu orders the reads.
	snap   atomic.Pointer[seqSnap]
	loadMu sync.Mutex
}

// seqSnap is one read of a database's sequence-filled columns. It is not
// modified once stored.
type seqSnap struct {
	cols seqColumns
	// failed: the read failed, and is not tried again (nothing is
	// explained by it); absent are the tables asked for that the read
	// did not have.
	failed bool
	absent map[fingerprint.Name]bool
}

// knows reports whether the snapshot answers for rel: it has its
// columns, or read it missing, or cannot be read.
func (n *seqSnap) knows(rel fingerprint.Name) bool {
	if n == nil {
		return false
	}
	_, ok := n.cols[rel]
	return ok || n.failed || n.absent[rel]
}

// seqDB is database db's entry.
func (r *Replayer) seqDB(db string) *seqDB {
	r.seqs.mu.Lock()
	defer r.seqs.mu.Unlock()
	d := r.seqs.dbs[db]
	if d == nil {
		if r.seqs.dbs == nil {
			r.seqs.dbs = map[string]*seqDB{}
		}
		d = &seqDB{}
		r.seqs.dbs[db] = d
	}
	return d
}

// load reads the sequence-filled columns of database db on the target,
// on a connection of the replayer's own (as loadCatalog reads the
// synchronization's catalog), unless a read since the caller looked
// answers for rel. A read that fails is not tried again: nothing is
// explained by it.
func (d *seqDB) load(r *Replayer, user, db string, rel fingerprint.Name) {
	d.loadMu.Lock()
	defer d.loadMu.Unlock()
	old := d.snap.Load()
	if old.knows(rel) {
		return
	}
	next := &seqSnap{absent: map[fingerprint.Name]bool{}}
	if old != nil {
		for k := range old.absent {
			next.absent[k] = true
		}
	}
	defer func() { d.snap.Store(next) }()
	ctx, cancel := context.WithTimeout(r.hard, r.opts.ConnectTimeout+seqTimeout)
	defer cancel()
	conn, err := r.quietConn(ctx, user, db)
	if err != nil {
		next.failed = true
		return
	}
	defer conn.Close(context.Background())
	if next.cols, err = readSeqColumns(ctx, conn); err != nil {
		next.failed = true
		return
	}
	if _, ok := next.cols[rel]; !ok {
		next.absent[rel] = true
	}
}

// readSeqColumns runs seqColumnsQuery on conn.
func readSeqColumns(ctx context.Context, conn *pgconn.PgConn) (seqColumns, error) {
	res := conn.Exec(ctx, "SET statement_timeout = "+strconv.FormatInt(seqTimeout.Milliseconds(), 10)+"; "+seqColumnsQuery)
	rs, err := res.ReadAll()
	if err != nil {
		return nil, err
	}
	cols := seqColumns{}
	last := rs[len(rs)-1]
	for _, row := range last.Rows {
		if len(row) != 4 {
			return nil, fmt.Errorf("sequence columns: bad row %q", row)
		}
		q := fingerprint.Name{Schema: string(row[0]), Name: string(row[1])}
		cols[q] = append(cols[q], string(row[2]))
		if string(row[3]) == "t" {
			bare := fingerprint.Name{Name: q.Name}
			cols[bare] = append(cols[bare], string(row[2]))
		}
	}
	return cols, nil
}

// sequenceReturned names the column of the statement's table, "orders.id",
// that the statement returns as the target's sequence assigned it (an
// INSERT ... RETURNING it, giving it no value of its own); "" when none,
// or when seqs does not know the table.
func sequenceReturned(cl *fingerprint.Class, seqs seqColumns) string {
	if cl.Returning == nil || cl.Insert == nil {
		return ""
	}
	for _, col := range seqs[cl.Insert.Rel] {
		if cl.Returning.Defaulted(col) {
			return cl.Insert.Rel.Name + "." + col
		}
	}
	return ""
}

// returnedSequences is the target's sequence-filled columns of the
// session's database when one of the execution's statements may return
// one whose values differ from the original's (an INSERT ... RETURNING
// whose rows' digests differ), read then if no read has its table yet,
// before the execution is recorded under its shard's lock; nil
// otherwise. With several such statements, the first's table decides
// whether to read.
func (s *session) returnedSequences(ev *event.Event, items []fingerprint.Item) seqColumns {
	ans := ev.Answer()
	if s.r.opts.DryRun || ans == nil || ans.Digests == nil {
		return nil
	}
	for i, it := range items {
		if cl := it.Class(ev.Query); cl.Returning != nil && cl.Insert != nil && valuesDiffer(ans, s.w.digests.done, i, it, ev.Query) {
			d := s.r.seqDB(s.db)
			if !d.snap.Load().knows(cl.Insert.Rel) {
				// A connection and a query, once per database and
				// table new to it: on the engine, where the other
				// sessions are not held up.
				s.block(func() { d.load(s.r, s.user, s.db, cl.Insert.Rel) })
			}
			if n := d.snap.Load(); n != nil {
				return n.cols
			}
			return nil
		}
	}
	return nil
}

// foreignKeySQLState is foreign_key_violation: a row that refers to one
// the target numbered otherwise, by the original's number.
const foreignKeySQLState = "23503"

// seqIDsKept bounds the ids a session keeps of its INSERTs.
const seqIDsKept = 64

// seqID is an id the original's sequence assigned and an INSERT of the
// session returned: the digest of the original's answer, one row of one
// value, and the column ("orders.id"). The value itself is not recorded,
// but a later statement's parameter that hashes to the digest is it.
type seqID struct {
	d    rowdigest.Digest
	v    rowdigest.Version // d's
	what string
}

// keepSeqID keeps the id statement i of ans returned, when it returned
// one row: what a later statement of the session that refers to that row
// sends, as the application read it from the original.
func (s *session) keepSeqID(ans *event.Answer, i int, what string) {
	if i >= len(ans.Rows) || ans.Rows[i] != 1 || i >= len(ans.Digests) {
		return
	}
	if len(s.seqIDs) == seqIDsKept {
		s.seqIDs = append(s.seqIDs[:0], s.seqIDs[1:]...)
	}
	s.seqIDs = append(s.seqIDs, seqID{ans.Digests[i], ans.DigestVersion, what})
}

// carriedSeqID names the column ("orders.id") of an id that one of the
// session's INSERTs returned in the original, when a parameter of ev is
// that id: in text, or as the int2, int4 or int8 of a binary parameter,
// in either form (a client may read it in one and send it in the other);
// "" when none is. A statement that carries it refers to a row the target
// numbered otherwise, so its answer differs with nothing wrong.
func (s *session) carriedSeqID(ev *event.Event) string {
	if len(s.seqIDs) == 0 || len(ev.Params) == 0 {
		return ""
	}
	var buf []byte
	w := ev.Wire()
	for i, p := range ev.Params {
		if p.Null {
			continue
		}
		// The id as the original's client sent it, and in the other
		// forms a client that decoded it may send it in.
		var n int64
		raw := []byte(p.Value)
		switch {
		case w.Binary(i) && len(raw) == 8:
			n = int64(binary.BigEndian.Uint64(raw))
		case w.Binary(i) && len(raw) == 4:
			n = int64(int32(binary.BigEndian.Uint32(raw)))
		case w.Binary(i) && len(raw) == 2:
			n = int64(int16(binary.BigEndian.Uint16(raw)))
		case w.Binary(i):
			continue
		default:
			var err error
			if n, err = strconv.ParseInt(p.Value, 10, 64); err != nil {
				continue
			}
		}
		cands := [][]byte{raw, strconv.AppendInt(nil, n, 10), binary.BigEndian.AppendUint64(nil, uint64(n))}
		if int64(int32(n)) == n {
			cands = append(cands, binary.BigEndian.AppendUint32(nil, uint32(n)))
		}
		for _, c := range cands {
			buf = rowdigest.Values(buf[:0], [][]byte{c})
			for _, id := range s.seqIDs {
				var d rowdigest.Digest
				d.AddVersion(id.v, buf)
				if id.d.Equal(d, true) {
					return id.what
				}
			}
		}
	}
	return ""
}
