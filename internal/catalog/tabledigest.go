package catalog

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/capture"
)

// DigestRanges is how many ranges of its integer primary key a table's
// digest is divided into, so that a difference is located.
const DigestRanges = 16

// digestSettings fix how each row is written as text, so that the same
// rows hash the same on any server and session: the settings a type's
// output reads are timestamps' and dates' (TimeZone, DateStyle),
// intervals' (IntervalStyle), floats' and geometric types'
// (extra_float_digits), bytea's (bytea_output), money's (lc_monetary:
// its currency symbol, separators and sign) and the reg* types'
// (search_path: regclass, regtype, regproc... print a name qualified or
// not by whether its schema is on the path). numeric, integers, text,
// json and xml are written alike under any setting (lc_numeric and
// lc_time only change to_char).
const digestSettings = `SET LOCAL TimeZone = 'UTC'; SET LOCAL DateStyle = 'ISO, MDY';
SET LOCAL IntervalStyle = 'postgres'; SET LOCAL extra_float_digits = 3; SET LOCAL bytea_output = 'hex';
SET LOCAL lc_monetary = 'C'; SET LOCAL search_path = pg_catalog`

const digestTablesQuery = `
SELECT n.nspname, c.relname, pg_relation_size(c.oid),
       coalesce((SELECT a.attname FROM pg_index i
                 JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0]
                 WHERE i.indrelid = c.oid AND i.indisprimary AND i.indnatts = 1
                   AND a.atttypid IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype)), '')
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind = 'r'
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\_toast%'
  AND n.nspname NOT LIKE 'pg\_temp%'
ORDER BY n.nspname, c.relname`

// DigestTables reads, in one REPEATABLE READ snapshot of conn's
// database, the digest of each table of at most below bytes
// (capture.TableDigests). With ref nil (a recording's start) it divides
// each table's integer key into DigestRanges ranges of its keys; with
// ref (a target) it digests ref's tables on ref's ranges, so that the two
// compare range by range (CompareDigests).
func DigestTables(ctx context.Context, conn *pgx.Conn, below int64, ref *capture.TableDigests) (*capture.TableDigests, error) {
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, digestSettings); err != nil {
		return nil, err
	}
	d := &capture.TableDigests{Below: below}
	// The snapshot is taken by the first query: read the position in it.
	if err := tx.QueryRow(ctx, `SELECT current_database(),
		CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_insert_lsn() END::text,
		pg_current_snapshot()::text`).Scan(&d.Database, &d.LSN, &d.Snapshot); err != nil {
		return nil, err
	}
	type table struct {
		schema, name, key string
		bytes             int64
	}
	rows, err := tx.Query(ctx, digestTablesQuery)
	if err != nil {
		return nil, err
	}
	found := map[string]table{}
	var order []table
	for rows.Next() {
		var t table
		if err := rows.Scan(&t.schema, &t.name, &t.bytes, &t.key); err != nil {
			return nil, err
		}
		found[t.schema+"."+t.name] = t
		order = append(order, t)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if ref != nil {
		order = order[:0]
		for _, r := range ref.Tables {
			if r.NotDigested != "" {
				continue
			}
			t, ok := found[r.Schema+"."+r.Name]
			if !ok {
				d.Tables = append(d.Tables, capture.TableDigest{Schema: r.Schema, Name: r.Name, NotDigested: "no such table on the target"})
				continue
			}
			td, err := digestTable(ctx, tx, t.schema, t.name, r.Key, r.Ranges)
			if err != nil {
				return nil, err
			}
			d.Tables = append(d.Tables, td)
		}
		return d, nil
	}
	for _, t := range order {
		if t.bytes > below {
			d.Tables = append(d.Tables, capture.TableDigest{Schema: t.schema, Name: t.name,
				NotDigested: fmt.Sprintf("larger than the size limit (%d > %d bytes)", t.bytes, below)})
			continue
		}
		var ranges []capture.KeyRange
		if t.key != "" {
			var lo, hi *int64
			if err := tx.QueryRow(ctx, fmt.Sprintf("SELECT min(%[1]s)::int8, max(%[1]s)::int8 FROM %[2]s",
				pgx.Identifier{t.key}.Sanitize(), pgx.Identifier{t.schema, t.name}.Sanitize())).Scan(&lo, &hi); err != nil {
				return nil, err
			}
			ranges = keyRanges(lo, hi)
		}
		td, err := digestTable(ctx, tx, t.schema, t.name, t.key, ranges)
		if err != nil {
			return nil, err
		}
		d.Tables = append(d.Tables, td)
	}
	return d, nil
}

// keyRanges divides lo..hi into up to DigestRanges ranges of equal
// width, after a first one for the keys below lo.
func keyRanges(lo, hi *int64) []capture.KeyRange {
	rs := []capture.KeyRange{{}}
	if lo == nil || hi == nil {
		return rs
	}
	width := (*hi-*lo)/DigestRanges + 1
	for b := *lo; b <= *hi; b += width {
		rs = append(rs, capture.KeyRange{Lo: &b})
		if b > *hi-width { // no overflow past hi
			break
		}
	}
	return rs
}

// digestTable reads one table's count and hash per range: with key and
// ranges, by width_bucket over the ranges' lower bounds; else one range.
func digestTable(ctx context.Context, tx pgx.Tx, schema, name, key string, ranges []capture.KeyRange) (capture.TableDigest, error) {
	td := capture.TableDigest{Schema: schema, Name: name, Key: key}
	rel := pgx.Identifier{schema, name}.Sanitize()
	bucket := "0"
	var bounds []int64
	if key != "" && len(ranges) > 1 {
		for _, r := range ranges[1:] {
			bounds = append(bounds, *r.Lo)
		}
		bucket = fmt.Sprintf("width_bucket(t.%s::int8, $1::int8[])", pgx.Identifier{key}.Sanitize())
	} else {
		ranges = []capture.KeyRange{{}}
	}
	q := fmt.Sprintf(`SELECT %s, count(*), coalesce(sum(hashtextextended(t::text, 0)), 0)::text FROM %s t GROUP BY 1`, bucket, rel)
	args := []any{}
	if bounds != nil {
		args = append(args, bounds)
	} else {
		q = strings.Replace(q, "GROUP BY 1", "", 1)
	}
	td.Ranges = make([]capture.KeyRange, len(ranges))
	for i, r := range ranges {
		td.Ranges[i] = capture.KeyRange{Lo: r.Lo, Hash: "0"}
	}
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return td, fmt.Errorf("digest of %s: %w", rel, err)
	}
	defer rows.Close()
	for rows.Next() {
		var b int
		var n int64
		var h string
		if err := rows.Scan(&b, &n, &h); err != nil {
			return td, err
		}
		if b >= 0 && b < len(td.Ranges) {
			td.Ranges[b].Rows, td.Ranges[b].Hash = n, h
		}
	}
	return td, rows.Err()
}

// DigestDiff is one table whose digest differs on the target, with the
// ranges that differ.
type DigestDiff struct {
	Schema, Name string
	// Why is set when the table could not be compared at all (missing).
	Why    string
	Ranges []string
	// Written is the start's capture.TableDigest.Written: rows written
	// in the table around the start's digest, which a copy at the
	// start's position may hold otherwise than the digest.
	Written int64
}

// Proven reports whether the difference proves the target's data
// differs from the start: nothing was seen written in the table while
// the start's digest and position were read.
func (d DigestDiff) Proven() bool { return d.Written == 0 }

// CompareDigests names each table of rec whose digest on the target
// (tgt, read with rec as its ref) differs, and its differing key
// ranges ("keys 100..199", "keys from 1600", "keys below 1", "all
// rows").
func CompareDigests(rec, tgt *capture.TableDigests) []DigestDiff {
	if rec == nil || tgt == nil {
		return nil
	}
	on := map[string]capture.TableDigest{}
	for _, t := range tgt.Tables {
		on[t.Schema+"."+t.Name] = t
	}
	var out []DigestDiff
	for _, r := range rec.Tables {
		if r.NotDigested != "" {
			continue
		}
		t, ok := on[r.Schema+"."+r.Name]
		if !ok || t.NotDigested != "" {
			why := "not digested on the target"
			if ok {
				why = t.NotDigested
			}
			out = append(out, DigestDiff{Schema: r.Schema, Name: r.Name, Why: why, Written: r.Written})
			continue
		}
		var diff []string
		for i, rr := range r.Ranges {
			if i < len(t.Ranges) && t.Ranges[i].Rows == rr.Rows && t.Ranges[i].Hash == rr.Hash {
				continue
			}
			diff = append(diff, rangeName(r.Ranges, i))
		}
		if diff != nil {
			out = append(out, DigestDiff{Schema: r.Schema, Name: r.Name, Ranges: diff, Written: r.Written})
		}
	}
	return out
}

func rangeName(rs []capture.KeyRange, i int) string {
	switch {
	case len(rs) == 1:
		return "all rows"
	case i == 0:
		return fmt.Sprintf("keys below %d", *rs[1].Lo)
	case i == len(rs)-1:
		return fmt.Sprintf("keys from %d", *rs[i].Lo)
	default:
		return fmt.Sprintf("keys %d..%d", *rs[i].Lo, *rs[i+1].Lo-1)
	}
}

// String says the difference: "public.t: keys 100..199, keys 200..299",
// and for one not proven, why: "(12 rows written while the start's
// digest was read: not proven)".
func (d DigestDiff) String() string {
	s := d.Schema + "." + d.Name + ": " + strings.Join(d.Ranges, ", ")
	if d.Why != "" {
		s = d.Schema + "." + d.Name + ": " + d.Why
	}
	switch {
	case d.Written < 0:
		s += " (its writes around the start's digest unknown: not proven)"
	case d.Written > 0:
		s += fmt.Sprintf(" (%d rows written while the start's digest was read: not proven)", d.Written)
	}
	return s
}

// ProvenDiffs are the differences of diffs that are proven
// (DigestDiff.Proven).
func ProvenDiffs(diffs []DigestDiff) []DigestDiff {
	var out []DigestDiff
	for _, d := range diffs {
		if d.Proven() {
			out = append(out, d)
		}
	}
	return out
}
