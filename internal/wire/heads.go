package wire

import (
	"bytes"
	"unsafe"
)

// The heads of the extended protocol's messages: the names a Parse,
// Bind, Execute or Close carries in front of the rest of its body, read
// in place. They are what the proxy reads on the relay's path, where
// decoding a message whole into pgproto3's types would copy its
// parameters; the capture decoder decodes whole messages with pgproto3
// and FuzzHeads checks that the two read the same names.
//
// Each returns views of body (strings sharing its memory, without a
// copy): valid only while body is, never to keep. Names.Parse and
// Names.Bind copy the names they keep. A body cut short gives what it
// holds (a name without its NUL is the rest of the body), as the proxy
// always read it: the server refuses such a message and ends the
// session.

// ParseHead is a Parse's statement name and query.
func ParseHead(body []byte) (name, query string) {
	n, rest, _ := bytes.Cut(body, []byte{0})
	return View(n), View(rest)
}

// BindHead is a Bind's portal and the statement it binds.
func BindHead(body []byte) (portal, stmt string) {
	p, rest, _ := bytes.Cut(body, []byte{0})
	return View(p), View(rest)
}

// ExecuteHead is the portal an Execute runs.
func ExecuteHead(body []byte) (portal string) {
	return View(body)
}

// CloseHead is what a Close (or Describe) names: its object type
// (CloseStatement or ClosePortal) and name; ok is false when the body
// is too short to name anything.
func CloseHead(body []byte) (kind byte, name string, ok bool) {
	if len(body) < 2 {
		return 0, "", false
	}
	return body[0], View(body[1:]), true
}

// View is the C string at the start of b (up to its first NUL, or all
// of b) as a string that shares b's memory, without a copy: for reading
// a message in a relay's buffer only, never to keep.
func View(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}
