// Package connstr answers questions about PostgreSQL connection strings
// (libpq keyword/value strings and URIs, as pgconn parses them) that
// several stages ask (whether a server is on this machine), and sets what
// every connection of pgrehearse has in common: TCP keepalives.
//
// It only parses: it never connects, resolves a name or reads a file other
// than what pgconn.ParseConfig reads (the libpq environment and the
// password file).
package connstr
