package replay

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// targetError is what the replay keeps of an error of the target.
type targetError struct {
	code    string // SQLSTATE, or one of the *SQLState constants
	message string
	// cause is the SQLSTATE behind it: its own, or for a 25P02 the
	// error that aborted the block on the target; baked: that error
	// came from a server-assigned id of the original written into the
	// statement (see bakedID).
	cause string
	baked bool
	// lost: the connection is gone and must be made again for the rest
	// of the session.
	lost bool
}

// classifyError sorts an execution's error. Server errors carry their
// SQLSTATE and leave the connection usable; anything else that closed the
// connection is a lost connection.
func classifyError(err error, conn *pgconn.PgConn) targetError {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// A FATAL (admin shutdown, idle timeout) ends the session too.
		return targetError{code: pgErr.Code, message: pgErr.Message, lost: conn.IsClosed()}
	}
	te := targetError{code: UnknownSQLState, message: err.Error(), lost: conn.IsClosed()}
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		te.code = CanceledSQLState
	case te.lost:
		te.code = ConnectionLostSQLState
	}
	return te
}

// connectError describes a failed connection.
func connectError(err error) (code, message string) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code, pgErr.Message
	}
	return "", err.Error()
}

// bakedID reports whether an error's message names an id the original's
// server assigned and a later statement's text repeats: a large object's
// OID (lo_unlink(16385) after lo_creat) or a transaction id
// (txid_status(742) after txid_current()), or a session's temporary
// schema, named by its backend's number (REINDEX SCHEMA pg_temp_3, as
// PostgreSQL's create_index test runs). The target assigns other ids,
// so such a statement fails there without its being the target's doing
// or the replay's order.
func bakedID(message string) bool {
	switch {
	case strings.HasPrefix(message, "large object ") && strings.HasSuffix(message, " does not exist"):
		return true
	case strings.HasPrefix(message, "transaction ID ") && strings.HasSuffix(message, " is in the future"):
		return true
	case (strings.HasPrefix(message, `schema "pg_temp_`) || strings.HasPrefix(message, `schema "pg_toast_temp_`)) && strings.HasSuffix(message, `" does not exist`):
		return true
	}
	return false
}
