package capture

// TableDigests is, for one database, an order-independent digest of each
// affordable table's rows, computed on the server in one REPEATABLE READ
// snapshot: what the replay compares the target with before its first
// statement, so that "the target's data differs" rests on the rows
// themselves. Absent from recordings made before it (no digest).
type TableDigests struct {
	// Database is the database the digests were read in.
	Database string `json:"database"`
	// LSN is the WAL position read inside the snapshot, and Snapshot
	// the snapshot itself (pg_current_snapshot()): the state the
	// digests describe.
	LSN      string `json:"lsn"`
	Snapshot string `json:"snapshot,omitempty"`
	// Below is the size limit: tables of more bytes are listed
	// NotDigested.
	Below  int64         `json:"below"`
	Tables []TableDigest `json:"tables,omitempty"`
}

// TableDigest is one table's digest, per range of its key.
type TableDigest struct {
	Schema string `json:"schema"`
	Name   string `json:"name"`
	// Key is the integer primary-key column the ranges divide; empty
	// when the table has none: one range holds every row.
	Key string `json:"key,omitempty"`
	// Ranges are in key order; the first holds the keys below the
	// second's lower bound, the last the keys from its own.
	Ranges []KeyRange `json:"ranges,omitempty"`
	// NotDigested says why the table has no digest (larger than Below,
	// the query failed or timed out).
	NotDigested string `json:"not_digested,omitempty"`
	// Written is the rows inserted, updated and deleted in the table,
	// as the cumulative statistics tell, from just before the digests'
	// snapshot to just after the start's WAL position was read: rows
	// a copy at that position may hold otherwise than the digest. A
	// difference on a table written so is not proven. 0 when none were
	// seen (the statistics lag: see docs/start-state.md), -1 when the
	// statistics could not tell.
	Written int64 `json:"written,omitempty"`
}

// KeyRange is the rows whose key is from Lo (nil: no lower bound) up to
// the next range's Lo.
type KeyRange struct {
	Lo   *int64 `json:"lo,omitempty"`
	Rows int64  `json:"rows"`
	// Hash is the sum of each row's hash (hashtextextended of the row's
	// text), in decimal: the same for the same rows in any order.
	Hash string `json:"hash"`
}
