package replay

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// targetError is what the replay keeps of an error of the target.
type targetError struct {
	code    string // SQLSTATE, or one of the *SQLState constants
	message string
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
