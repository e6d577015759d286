package logread

import (
	"bytes"
)

// Lines the server writes to its stderr log without the log_line_prefix,
// because they do not go through its logging: written by the server with
// fprintf(stderr, ...), they reach the log file (logging_collector) as
// they are. They are not lines the reader failed to read, nor part of the
// message before them: they are counted apart (SkipUnprefixed).
//
// The memory-context dump PostgreSQL writes before an "out of memory"
// error (MemoryContextStats), a context a line, two spaces of indent a
// level, from a real PostgreSQL 15:
//
//	TopMemoryContext: 97680 total in 5 blocks; 14896 free (10 chunks); 82784 used
//	  CacheMemoryContext: 524288 total in 7 blocks; 98488 free (0 chunks); 425800 used
//	    index info: 2048 total in 2 blocks; 496 free (1 chunks); 1552 used: pg_db_role_setting_databaseid_rol_index
//	    12 more child contexts containing 24576 total in 22 blocks; 9320 free (13 chunks); 15256 used
//	Grand total: 1119392 bytes in 181 blocks; 276432 free (125 chunks); 842960 used
//
// Generation and slab contexts word their counts a little differently
// ("(5 chunks)" after the blocks, "3 empty blocks"); all say "N total in
// M blocks" (or "N bytes in M blocks"), "free" and "used". An assertion
// failure in a build with assertions (src/backend/utils/error/assert.c)
// writes a TRAP line, then the backtrace glibc's backtrace_symbols_fd
// prints, a frame a line:
//
//	TRAP: failed Assert("false"), File: "xact.c", Line: 1234, PID: 4242
//	TRAP: FailedAssertion("false", File: "xact.c", Line: 1234, PID: 4242)
//	postgres: app shop [local] SELECT(ExceptionalCondition+0x9e)[0x55d0c3a1b2ce]
//	/usr/lib/postgresql/15/bin/postgres(+0x3f1a2b)[0x55d0c35f1a2b]

// unprefixed reports whether line is one the server writes without its
// prefix (see the comment above).
func unprefixed(line []byte) bool {
	b := bytes.TrimLeft(line, " ")
	switch {
	case len(b) == 0:
		return false
	case bytes.HasPrefix(b, []byte("TRAP: ")):
		return true
	case b[len(b)-1] == ']':
		return isBacktraceFrame(b)
	}
	return isMemoryContextLine(b)
}

// isMemoryContextLine reports whether b (without its indent) is a line of
// a memory-context dump: "NAME: N total in M blocks; ... free (...); ...
// used", "K more child contexts containing N total in M blocks; ...",
// "Grand total: N bytes in M blocks; ...".
func isMemoryContextLine(b []byte) bool {
	i := bytes.Index(b, []byte(" total in "))
	unit := len(" total in ")
	if i < 0 {
		if !bytes.HasPrefix(b, []byte("Grand total: ")) {
			return false
		}
		if i = bytes.Index(b, []byte(" bytes in ")); i < 0 {
			return false
		}
		unit = len(" bytes in ")
	}
	// The count before, and the blocks after.
	if i == 0 || !isDigit(b[i-1]) {
		return false
	}
	rest := b[i+unit:]
	n := 0
	for n < len(rest) && isDigit(rest[n]) {
		n++
	}
	if n == 0 || !bytes.HasPrefix(rest[n:], []byte(" blocks")) {
		return false
	}
	return bytes.Contains(rest, []byte(" free (")) && bytes.Contains(rest, []byte(" used"))
}

// isBacktraceFrame reports whether b is a frame of backtrace_symbols_fd:
// "binary(symbol+0x9e)[0x55d0c3a1b2ce]" or "binary(+0x3f1a2b)[0x...]".
func isBacktraceFrame(b []byte) bool {
	i := bytes.LastIndex(b, []byte("[0x"))
	if i <= 0 || b[i-1] != ')' {
		return false
	}
	for _, c := range b[i+3 : len(b)-1] {
		if !isHex(c) {
			return false
		}
	}
	open := bytes.LastIndexByte(b[:i-1], '(')
	return open > 0 && bytes.Contains(b[open:i], []byte("+0x"))
}

func isHex(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' }

// isBlank reports whether line holds nothing but spaces.
func isBlank(line []byte) bool {
	for _, c := range line {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}
