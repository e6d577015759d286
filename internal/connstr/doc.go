// Package connstr answers questions about PostgreSQL connection strings
// (libpq keyword/value strings and URIs, as pgconn parses them) that
// several stages ask: whether a server is on this machine, and how to say
// that a string does not parse without printing it.
//
// Every message pgrehearse writes about a connection string that does not
// parse comes from Parse or SafeError: it names the libpq keywords the
// string gave and what was wrong, never a value. pgconn's own message
// quotes the string and masks its password on a best-effort basis, which
// misses forms libpq accepts (spaces around "=").
//
// It only parses: it never connects, resolves a name or reads a file other
// than what pgconn.ParseConfig reads (the libpq environment and the
// password file).
package connstr
