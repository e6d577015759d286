package syncdep

import "github.com/pgrehearse/pgrehearse/internal/fingerprint"

// What a statement does to relations and to its transaction is read by
// the one statement classifier (fingerprint.Class), once per statement
// text; this package applies a database's catalog to it (Resolver) and
// follows the transactions (Tracker). The names below are that
// classifier's vocabulary, as this package uses it.

// Statement is what one SQL statement does, from its text alone.
type Statement = fingerprint.Class

// Name is a relation or function as a statement names it.
type Name = fingerprint.Name

// Write is a relation a statement writes, and how.
type Write = fingerprint.Write

// Op is a kind of write, for the foreign keys it checks.
type Op = fingerprint.Op

// Kinds of writes.
const (
	OpInsert = fingerprint.OpInsert
	OpUpdate = fingerprint.OpUpdate
	OpDelete = fingerprint.OpDelete
)

// Control says how a statement moves its session's transaction.
type Control = fingerprint.TxControl

// Transaction effects.
const (
	TxNone             = fingerprint.TxNone
	TxBegin            = fingerprint.TxBegin
	TxCommit           = fingerprint.TxCommit
	TxRollback         = fingerprint.TxRollback
	TxPrepare          = fingerprint.TxPrepare
	TxCommitPrepared   = fingerprint.TxCommitPrepared
	TxRollbackPrepared = fingerprint.TxRollbackPrepared
	// TxSavepoint: SAVEPOINT, RELEASE and ROLLBACK TO SAVEPOINT, which
	// keep the transaction open. What a rolled-back savepoint wrote is
	// still counted as written: more waiting, never less.
	TxSavepoint = fingerprint.TxSavepoint
)
