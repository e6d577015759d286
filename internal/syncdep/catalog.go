package syncdep

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Catalog is what one database's schema tells about the relations a
// statement reaches beyond those it names. It is plain data: LoadCatalog
// reads it from a server, tests write it by hand.
type Catalog struct {
	Relations   []Relation
	Inherits    []Inherit
	ForeignKeys []ForeignKey
	ViewBases   []ViewBase
	// Functions are the functions outside pg_catalog and
	// information_schema (the users' and the extensions').
	Functions []Function
	// Builtins are the names of the functions of pg_catalog and
	// information_schema.
	Builtins []string
	// Indexes are the unique indexes and exclusion constraints of the
	// relations: what tells which rows a statement reaches by key, and
	// which writes may conflict with rows they do not name.
	Indexes []Index
	// Sequences are the integer columns whose values a sequence gives
	// (serial, identity), with what it had given when the catalog was
	// read (see KeySequence).
	Sequences []KeySequence
}

// KeySequence is a column of Rel whose values the sequence it owns gives
// (a serial or identity column), counting up without cycling: Last is
// the highest value the sequence had given when the catalog was read
// (its start less one when it gave none). A row whose key in that column
// is at most Last was not made by an insert that took its key from the
// sequence afterwards (see RowKey.SeqLast).
type KeySequence struct {
	Rel    uint32
	Column string
	Last   int64
}

// Index is a unique index, or an exclusion constraint, of a table.
type Index struct {
	Rel     uint32
	Primary bool
	// Columns are its key columns in order (not its INCLUDE columns);
	// an expression column has an empty Name.
	Columns []IndexColumn
	// Other: partial, on expressions, or an exclusion constraint: which
	// rows conflict cannot be told by equal columns.
	Other bool
}

// IndexColumn is a key column of an Index: its name, its type's OID, and
// whether its collation tells equal values by their bytes (every
// collation but a nondeterministic ICU one).
type IndexColumn struct {
	Name          string
	Type          uint32
	Deterministic bool
}

// Relation is a table, partitioned table, view, materialized view or
// foreign table.
type Relation struct {
	OID          uint32
	Schema, Name string
	// Kind is pg_class.relkind: 'r', 'p', 'v', 'm' or 'f'.
	Kind byte
	// Triggers: it has triggers of its own (not those of foreign keys).
	// Rules: it has rewrite rules other than a view's _RETURN.
	Triggers, Rules bool
}

// Inherit is a pg_inherits row: Child is a partition or an inheritance
// child of Parent.
type Inherit struct{ Child, Parent uint32 }

// ForeignKey is a foreign key of Child referencing Parent. DeleteWrites
// and UpdateWrites say whether deleting or updating a parent row changes
// child rows (CASCADE, SET NULL, SET DEFAULT) rather than only checking
// them.
type ForeignKey struct {
	Child, Parent              uint32
	DeleteWrites, UpdateWrites bool
}

// ViewBase says that the view View reads the relation Base.
type ViewBase struct{ View, Base uint32 }

// Function is a function outside pg_catalog. Volatility is
// pg_proc.provolatile: 'i', 's' or 'v'.
type Function struct {
	Schema, Name string
	Volatility   byte
	Language     string
	// Extension: the function belongs to an extension.
	Extension bool
}

// CatalogTimeout bounds each query of LoadCatalog.
const CatalogTimeout = 30 * time.Second

// The queries of LoadCatalog. Temporary and system schemas are left out:
// their relations are no other session's business.
const (
	relationsQuery = `
SELECT c.oid, n.nspname, c.relname, c.relkind,
       EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = c.oid AND NOT t.tgisinternal),
       EXISTS (SELECT 1 FROM pg_rewrite r WHERE r.ev_class = c.oid AND r.rulename <> '_RETURN')
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\_toast%' AND n.nspname NOT LIKE 'pg\_temp%'`
	inheritsQuery    = `SELECT inhrelid, inhparent FROM pg_inherits`
	foreignKeysQuery = `
SELECT conrelid, confrelid, confdeltype IN ('c', 'n', 'd'), confupdtype IN ('c', 'n', 'd')
FROM pg_constraint WHERE contype = 'f'`
	viewBasesQuery = `
SELECT DISTINCT r.ev_class, d.refobjid
FROM pg_rewrite r
JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid AND d.refclassid = 'pg_class'::regclass
WHERE r.rulename = '_RETURN' AND d.refobjid <> r.ev_class`
	functionsQuery = `
SELECT n.nspname, p.proname, p.provolatile, l.lanname,
       EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
FROM pg_proc p
JOIN pg_namespace n ON n.oid = p.pronamespace
JOIN pg_language l ON l.oid = p.prolang
WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')`
	// indexesQuery has a row per key column of each unique index or
	// exclusion constraint, in order.
	indexesQuery = `
SELECT i.indexrelid, i.indrelid, i.indisprimary,
       i.indisexclusion OR i.indpred IS NOT NULL OR i.indexprs IS NOT NULL,
       a.attname, a.atttypid, coalesce(co.collisdeterministic, true)
FROM pg_index i
JOIN pg_class c ON c.oid = i.indrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum AND k.attnum > 0
LEFT JOIN pg_collation co ON co.oid = a.attcollation
WHERE (i.indisunique OR i.indisexclusion) AND k.ord <= i.indnkeyatts
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\_toast%' AND n.nspname NOT LIKE 'pg\_temp%'
ORDER BY i.indexrelid, k.ord`
	// sequencesQuery: the columns (of serial or identity) whose values
	// an ascending, non-cycling sequence gives, with the last value it
	// gave (its start less one when none; left out when the user may not
	// read it).
	sequencesQuery = `
SELECT d.refobjid, a.attname,
       CASE WHEN has_sequence_privilege(ps.seqrelid, 'SELECT,USAGE')
            THEN coalesce(pg_sequence_last_value(ps.seqrelid), ps.seqstart - 1) END
FROM pg_depend d
JOIN pg_sequence ps ON ps.seqrelid = d.objid
JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass
  AND d.deptype IN ('a', 'i') AND d.refobjsubid > 0
  AND ps.seqincrement > 0 AND NOT ps.seqcycle`
	builtinsQuery = `
SELECT DISTINCT proname FROM pg_proc
WHERE pronamespace IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)`
)

// LoadCatalog reads the catalog of the database conn is connected to, in
// a read-only transaction that it rolls back.
func LoadCatalog(ctx context.Context, conn *pgconn.PgConn) (*Catalog, error) {
	c := &Catalog{}
	if err := conn.Exec(ctx, "BEGIN READ ONLY; SET LOCAL statement_timeout = "+strconv.FormatInt(CatalogTimeout.Milliseconds(), 10)).Close(); err != nil {
		return nil, err
	}
	defer func() { conn.Exec(context.WithoutCancel(ctx), "ROLLBACK").Close() }()
	var lastIndex uint32
	steps := []struct {
		what, sql string
		cols      int
		row       func([][]byte) error
	}{
		{"relations", relationsQuery, 6, func(r [][]byte) error {
			oid, err := parseOID(r[0])
			if err != nil || len(r[3]) != 1 {
				return fmt.Errorf("bad row %q", r)
			}
			c.Relations = append(c.Relations, Relation{OID: oid, Schema: string(r[1]), Name: string(r[2]), Kind: r[3][0],
				Triggers: isTrue(r[4]), Rules: isTrue(r[5])})
			return nil
		}},
		{"inheritance", inheritsQuery, 2, func(r [][]byte) error {
			child, parent, err := twoOIDs(r)
			if err != nil {
				return err
			}
			c.Inherits = append(c.Inherits, Inherit{Child: child, Parent: parent})
			return nil
		}},
		{"foreign keys", foreignKeysQuery, 4, func(r [][]byte) error {
			child, parent, err := twoOIDs(r)
			if err != nil {
				return err
			}
			c.ForeignKeys = append(c.ForeignKeys, ForeignKey{Child: child, Parent: parent, DeleteWrites: isTrue(r[2]), UpdateWrites: isTrue(r[3])})
			return nil
		}},
		{"views", viewBasesQuery, 2, func(r [][]byte) error {
			view, base, err := twoOIDs(r)
			if err != nil {
				return err
			}
			c.ViewBases = append(c.ViewBases, ViewBase{View: view, Base: base})
			return nil
		}},
		{"functions", functionsQuery, 5, func(r [][]byte) error {
			if len(r[2]) != 1 {
				return fmt.Errorf("bad row %q", r)
			}
			c.Functions = append(c.Functions, Function{Schema: string(r[0]), Name: string(r[1]), Volatility: r[2][0],
				Language: string(r[3]), Extension: isTrue(r[4])})
			return nil
		}},
		{"indexes", indexesQuery, 7, func(r [][]byte) error {
			idx, rel, err := twoOIDs(r)
			if err != nil {
				return err
			}
			if idx != lastIndex {
				lastIndex = idx
				c.Indexes = append(c.Indexes, Index{Rel: rel, Primary: isTrue(r[2]), Other: isTrue(r[3])})
			}
			col := IndexColumn{Name: string(r[4]), Deterministic: isTrue(r[6])}
			if r[5] != nil {
				if col.Type, err = parseOID(r[5]); err != nil {
					return fmt.Errorf("bad row %q", r)
				}
			}
			ix := &c.Indexes[len(c.Indexes)-1]
			ix.Columns = append(ix.Columns, col)
			return nil
		}},
		{"sequences", sequencesQuery, 3, func(r [][]byte) error {
			if r[2] == nil {
				return nil // the user may not read it
			}
			rel, err := parseOID(r[0])
			last, err2 := strconv.ParseInt(string(r[2]), 10, 64)
			if err != nil || err2 != nil {
				return fmt.Errorf("bad row %q", r)
			}
			c.Sequences = append(c.Sequences, KeySequence{Rel: rel, Column: string(r[1]), Last: last})
			return nil
		}},
		{"builtin functions", builtinsQuery, 1, func(r [][]byte) error {
			c.Builtins = append(c.Builtins, string(r[0]))
			return nil
		}},
	}
	for _, s := range steps {
		res := conn.ExecParams(ctx, s.sql, nil, nil, nil, nil).Read()
		if res.Err != nil {
			return nil, fmt.Errorf("%s: %w", s.what, res.Err)
		}
		for _, row := range res.Rows {
			if len(row) != s.cols {
				return nil, fmt.Errorf("%s: %d columns, want %d", s.what, len(row), s.cols)
			}
			if err := s.row(row); err != nil {
				return nil, fmt.Errorf("%s: %w", s.what, err)
			}
		}
	}
	return c, nil
}

func parseOID(b []byte) (uint32, error) {
	v, err := strconv.ParseUint(string(b), 10, 32)
	return uint32(v), err
}

// twoOIDs reads the first two columns of a row as OIDs.
func twoOIDs(r [][]byte) (uint32, uint32, error) {
	a, err1 := parseOID(r[0])
	b, err2 := parseOID(r[1])
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("bad row %q", r)
	}
	return a, b, nil
}

func isTrue(b []byte) bool { return len(b) == 1 && b[0] == 't' }
