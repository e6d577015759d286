package wire

import "strings"

// Names tracks one session's named objects of the extended protocol, as
// the client's messages make and close them: the prepared statements a
// Parse names and the portals a Bind makes of them. S is what the
// caller follows of a statement, P of a portal. It is the one table of
// names the proxy (which follows the statements that change the
// session's state) and the capture decoder (which follows every
// statement, to give each Execute its query) keep; internal/archdoc
// fails when either keeps a map of statements or portals of its own.
//
// An object exists from the message that makes it, as the server sees
// it: a Parse or Bind the server refuses discards what follows up to
// the client's Sync, which the caller follows from the answers. The
// unnamed statement and portal are objects named "", which each Parse
// or Bind replaces. A name handed to Names may be a view of a relay's
// buffer (View): what Names keeps it copies.
//
// The zero value is empty and ready; a Names is not safe for
// concurrent use.
type Names[S, P any] struct {
	stmts   map[string]S
	portals map[string]P
}

// Parse notes a Parse of statement name: it holds s from now on, or,
// with keep false, nothing the caller follows (the name is forgotten).
func (n *Names[S, P]) Parse(name string, s S, keep bool) {
	if !keep {
		if len(n.stmts) > 0 {
			delete(n.stmts, name)
		}
		return
	}
	if n.stmts == nil {
		n.stmts = map[string]S{}
	}
	n.stmts[strings.Clone(name)] = s
}

// Bind notes a Bind that makes portal: it holds p from now on, or,
// with keep false, nothing the caller follows (the statement bound is
// one Names does not hold).
func (n *Names[S, P]) Bind(portal string, p P, keep bool) {
	if !keep {
		if len(n.portals) > 0 {
			delete(n.portals, portal)
		}
		return
	}
	if n.portals == nil {
		n.portals = map[string]P{}
	}
	n.portals[strings.Clone(portal)] = p
}

// Close notes a Close of kind CloseStatement (statement name is gone)
// or any other (portal name is gone, as ClosePortal says).
func (n *Names[S, P]) Close(kind byte, name string) {
	if kind == CloseStatement {
		if len(n.stmts) > 0 {
			delete(n.stmts, name)
		}
		return
	}
	if len(n.portals) > 0 {
		delete(n.portals, name)
	}
}

// Statement is what statement name holds, ok false when Names holds no
// such statement.
func (n *Names[S, P]) Statement(name string) (s S, ok bool) {
	s, ok = n.stmts[name]
	return s, ok
}

// Portal is what portal name holds, ok false when Names holds no such
// portal.
func (n *Names[S, P]) Portal(name string) (p P, ok bool) {
	p, ok = n.portals[name]
	return p, ok
}

// Len is how many statements and portals Names holds.
func (n *Names[S, P]) Len() (stmts, portals int) { return len(n.stmts), len(n.portals) }

// Reset forgets every statement and portal, and the memory they took.
func (n *Names[S, P]) Reset() { n.stmts, n.portals = nil, nil }
