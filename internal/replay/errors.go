package replay

import (
	"context"
	"encoding/binary"
	"errors"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/event"
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

// oidLookupError reports whether an error's message is one of a catalog
// lookup by object id that found no such object: "cache lookup failed
// for relation 16390", "could not open relation with OID 16390",
// "relation with OID 16390 does not exist" (PostgreSQL's elog and
// ereport texts for a missing OID).
func oidLookupError(message string) bool {
	switch {
	case strings.HasPrefix(message, "cache lookup failed for "):
		return true
	case strings.HasPrefix(message, "could not open relation with OID "):
		return true
	case strings.Contains(message, " with OID ") && strings.HasSuffix(message, " does not exist"):
		return true
	}
	return false
}

// oidTypes are the types whose values are object ids, by their OIDs (as
// a Parse names them): oid, regproc, regprocedure, regclass, regtype.
var oidTypes = map[uint32]bool{26: true, 24: true, 2202: true, 2205: true, 2206: true}

// oidCast finds a value cast to one of oidTypes in a statement's text: a
// parameter ($1::pg_catalog.oid, as psql's \d sends with the extended
// protocol) or a literal ('16390'::pg_catalog.oid, as it sends with the
// simple one; a log's statement).
var oidCast = regexp.MustCompile(`(?i)(\$[0-9]+|'[0-9]+'|\b[0-9]+)\s*::\s*(?:pg_catalog\s*\.\s*)?(?:oid|regclass|regprocedure|regproc|regtype)\b`)

// bakedOIDParam reports whether an error of the target came from an
// object id the original's server assigned, which the execution passed
// typed as an id: an OID lookup error (oidLookupError) of a statement
// holding, cast to oid, regclass, regproc or regtype in its text or so
// typed by its Parse, a value at or above event.FirstUserOID. psql's \d
// asks for pg_get_partkeydef('16390'::pg_catalog.oid) with the OID its
// previous query read from the original; the target assigned its tables
// other OIDs. An id below FirstUserOID is built in, the same on every
// server, and never explains an error.
func bakedOIDParam(message string, ev *event.Event) bool {
	if ev == nil || !oidLookupError(message) {
		return false
	}
	for _, m := range oidCast.FindAllStringSubmatch(ev.Query, -1) {
		v := m[1]
		switch {
		case v[0] == '$':
			n, err := strconv.Atoi(v[1:])
			if err != nil || n < 1 || n > len(ev.Params) {
				continue
			}
			if assignedOIDParam(ev, n-1) {
				return true
			}
		case v[0] == '\'':
			if assignedOID(v[1 : len(v)-1]) {
				return true
			}
		default:
			if assignedOID(v) {
				return true
			}
		}
	}
	if w := ev.Wire(); w != nil {
		for i, t := range w.ParamOIDs {
			if oidTypes[t] && i < len(ev.Params) && assignedOIDParam(ev, i) {
				return true
			}
		}
	}
	return false
}

// assignedOIDParam reports whether parameter i of ev holds an id the
// original's server assigned, in text or in binary format.
func assignedOIDParam(ev *event.Event, i int) bool {
	p := ev.Params[i]
	if p.Null {
		return false
	}
	if ev.Wire().Binary(i) {
		return len(p.Value) == 4 && binary.BigEndian.Uint32([]byte(p.Value)) >= event.FirstUserOID
	}
	return assignedOID(p.Value)
}

// assignedOID reports whether s, an OID in text form, is one a server
// assigned after initdb.
func assignedOID(s string) bool {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 32)
	return err == nil && n >= event.FirstUserOID
}
