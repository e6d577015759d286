package capture

import "time"

// StartState is the upstream server's state when a capture started, read
// through a monitoring connection (package catalog reads it): the point a
// copy must be restored to for a replay of the capture to start where the
// recording did, and what a target is checked against before a replay.
// It is an optional part of the manifest: a capture taken without a
// monitoring connection has none, and old captures read unchanged.
type StartState struct {
	// Time is the server's clock when LSN was read.
	Time time.Time `json:"time"`
	// LSN is the WAL position on a primary, pg_current_wal_insert_lsn():
	// past every commit made before it was read, those with
	// synchronous_commit = off still in the WAL buffers included, which
	// pg_current_wal_lsn (the position written) may not be yet. On a
	// standby (Standby) it is pg_last_wal_replay_lsn(). As PostgreSQL
	// writes it ("0/16B3748").
	LSN     string `json:"lsn"`
	Standby bool   `json:"standby,omitempty"`
	// ServerVersion is server_version ("15.4"); ServerVersionNum is
	// server_version_num (150004).
	ServerVersion    string `json:"server_version"`
	ServerVersionNum int    `json:"server_version_num"`
	// SystemIdentifier is pg_control_system().system_identifier, in
	// decimal (a JSON number would lose its last digits); empty when the
	// role may not read it. A copy restored from a base backup has the
	// same; a logical copy (pg_dump, replication) has another.
	SystemIdentifier string `json:"system_identifier,omitempty"`
	// CountBelow is the size limit of the exact counts: each table whose
	// Bytes were at most this was counted (count(*), RowsCounted), the
	// larger ones estimated. 0 when nothing was counted (captures
	// written before the counts, or counting turned off): every Rows is
	// then an estimate.
	CountBelow int64 `json:"count_below,omitempty"`
	// Databases are the databases the monitoring role can connect to
	// (not templates), in name order.
	Databases []StartDatabase `json:"databases"`
	// Digests are the digests of the monitoring connection's database's
	// tables at the start; nil when none were read (recordings made
	// before them).
	Digests *TableDigests `json:"digests,omitempty"`
}

// StartDatabase is one database's tables at the start.
type StartDatabase struct {
	Name   string       `json:"name"`
	Tables []StartTable `json:"tables,omitempty"`
	// Error says why the database's tables could not be read (it
	// refused the connection, a query timed out); Tables is then empty.
	Error string `json:"error,omitempty"`
}

// StartTable is one table's rows and size at the start.
type StartTable struct {
	Schema string `json:"schema"`
	Name   string `json:"name"`
	// Rows is the number of rows, counted or estimated as RowsFrom
	// says; -1 when unknown (the table was never analyzed or vacuumed, and the
	// statistics have no live-row count for it).
	Rows     int64     `json:"rows"`
	RowsFrom RowSource `json:"rows_from,omitempty"`
	// Bytes is pg_relation_size: the main fork, without indexes or
	// TOAST.
	Bytes int64 `json:"bytes"`
	// CountDrift is, for a counted table, the rows inserted and deleted
	// in it from before its count to the end of its database's counts,
	// as the cumulative statistics tell: how far the count may be from
	// a copy at LSN. 0 when none were seen.
	CountDrift int64 `json:"count_drift,omitempty"`
	// CountError says why a table within the count's limit was not
	// counted (the count timed out, the role may not read the table);
	// Rows is then the estimate.
	CountError string `json:"count_error,omitempty"`
}

// RowSource says where a row count comes from: a count or an estimate.
type RowSource string

const (
	// RowsReltuples: pg_class.reltuples, which VACUUM and ANALYZE
	// refresh, and a physical copy carries over.
	RowsReltuples RowSource = "reltuples"
	// RowsLiveTuples: pg_stat_user_tables.n_live_tup, for a table never
	// analyzed; the cumulative statistics are not in a physical copy.
	RowsLiveTuples RowSource = "n_live_tup"
	// RowsCounted: count(*), exact: at the start for a table within
	// StartState.CountBelow, and on a target for the same tables, or for
	// a small table never analyzed there.
	RowsCounted RowSource = "count"
)
