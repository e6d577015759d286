package fixes

import "strconv"

// BatchInserts is a fix of the application rather than of the server: the
// workload's single-row INSERTs sent in batches of BatchRows rows
// (rehearse --batch-inserts, package batch). It has no SQL: its rounds
// replay the same traffic with the INSERTs merged, and what it saves is
// judged per inserted row (judge.BatchInserts), not by the comparison.
const BatchInserts Kind = "batch_inserts"

// OriginBatch: rehearse --batch-inserts asked for it.
const OriginBatch Origin = "batch"

// Batch is the fix of sending single-row INSERTs in batches of rows.
func Batch(rows int) Fix {
	return Fix{Name: "batch-inserts-" + strconv.Itoa(rows), Kind: BatchInserts, Origin: OriginBatch, BatchRows: rows,
		Databases: []string{}, Fingerprints: []string{}}
}
