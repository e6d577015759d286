package fingerprint

import (
	"hash/maphash"
	"strings"
)

// Local is one goroutine's front to a shared Cache, for a caller that
// looks up a text per event of a large log. It answers the texts and
// shapes it saw recently with one hash of the text and no lock, and it
// keeps with each answer a value of the caller's, made once from the
// Items by the function given to NewLocal: analyze keeps there the
// figures each statement adds to, so that an event costs no lookup by
// fingerprint either.
//
// A Local holds a fixed number of entries (a two-way set-associative
// table): a text that falls out is asked of the Cache again. Keys are
// copies, so a Local never pins a reader's buffer, and texts longer than
// localMaxKey are not kept. A Local is not safe for concurrent use; the
// Cache behind it is, and several Locals may share one.
type Local[T any] struct {
	c       *Cache
	seed    maphash.Seed
	resolve func([]Item) T
	sets    []localSet[T]
	mask    uint64
	buf     []byte // the shape being built
	// seen holds hashes of texts looked up by their shape. A text with
	// constants is kept by itself only when it comes again: most such
	// texts are seen once, and would push out entries in use.
	seen []uint64
	// tmpls holds the templates of shapes in use by the first bytes of
	// their texts (see template.go), two to a set: most texts with
	// constants are recognized without the shape lexer.
	tmpls []tmplSet[T]
}

type tmplSet[T any] [2]*template[T]

// localTmplSets is the number of sets of templates of a Local.
const localTmplSets = 1024

// localSets is the number of sets of a Local: 4096 entries, some 160 KB.
const localSets = 2048

// localMaxKey bounds the texts and shapes a Local keeps: longer ones are
// rare, and each costs the parser or a shape far more than a lookup.
const localMaxKey = 4096

// localSet holds two entries, the one used last first.
type localSet[T any] [2]localEntry[T]

type localEntry[T any] struct {
	hash  uint64
	key   string
	shape bool // key is a shape, not a text
	val   T
	tmpl  *template[T] // of a shape, when it has one
}

// NewLocal returns a Local in front of c. resolve makes the caller's
// value of a text's Items; it is called once per entry, on a miss, and
// the Items must not be modified.
func NewLocal[T any](c *Cache, resolve func(items []Item) T) *Local[T] {
	return &Local[T]{
		c:       c,
		seed:    maphash.MakeSeed(),
		resolve: resolve,
		sets:    make([]localSet[T], localSets),
		mask:    localSets - 1,
		seen:    make([]uint64, 2*localSets),
		tmpls:   make([]tmplSet[T], localTmplSets),
	}
}

// Get returns the value of text's Items (see Cache.Get).
func (l *Local[T]) Get(text string) T {
	h := maphash.String(l.seed, text)
	s := &l.sets[h&l.mask]
	if s[0].hash == h && !s[0].shape && s[0].key == text {
		return s[0].val
	}
	if s[1].hash == h && !s[1].shape && s[1].key == text {
		s[0], s[1] = s[1], s[0]
		return s[0].val
	}
	return l.getShape(text, h)
}

// getShape looks text up by its shape, then asks the Cache.
func (l *Local[T]) getShape(text string, h uint64) T {
	var ts *tmplSet[T]
	if len(text) >= tmplKey {
		ts = &l.tmpls[prefixHash(text)&(localTmplSets-1)]
		if t := ts[0]; t != nil && t.match(text) {
			return l.seenShaped(text, h, t.val)
		}
		if t := ts[1]; t != nil && t.match(text) {
			ts[0], ts[1] = t, ts[0]
			return l.seenShaped(text, h, t.val)
		}
	}
	sh, ok := shape(text, l.buf[:0])
	l.buf = sh[:0]
	if !ok {
		v := l.resolve(l.c.miss(text, nil, true))
		if len(text) <= localMaxKey {
			l.insert(h, strings.Clone(text), false, v, nil)
		}
		return v
	}
	v, t := l.byShape(text, sh)
	if ts != nil && t != nil && ts[0] != t {
		ts[0], ts[1] = t, ts[0]
	}
	return l.seenShaped(text, h, v)
}

// seenShaped returns v, the value of text found by its shape, and keeps
// text by itself the second time it comes.
func (l *Local[T]) seenShaped(text string, h uint64, v T) T {
	if g := &l.seen[h&uint64(len(l.seen)-1)]; *g != h {
		*g = h
	} else if len(text) <= localMaxKey {
		l.insert(h, strings.Clone(text), false, v, nil)
	}
	return v
}

// byShape returns the value of shape sh of text, and the shape's
// template if it has one.
func (l *Local[T]) byShape(text string, sh []byte) (T, *template[T]) {
	hs := maphash.Bytes(l.seed, sh)
	s := &l.sets[hs&l.mask]
	if s[0].hash == hs && s[0].shape && s[0].key == string(sh) {
		return s[0].val, s[0].tmpl
	}
	if s[1].hash == hs && s[1].shape && s[1].key == string(sh) {
		s[0], s[1] = s[1], s[0]
		return s[0].val, s[0].tmpl
	}
	// A text seen before may be in the Cache by itself and not by its
	// shape; miss looks it up after the shape.
	v := l.resolve(l.c.miss(text, sh, true))
	if len(sh) > localMaxKey {
		return v, nil
	}
	t := newTemplate(text, sh, v)
	l.insert(hs, string(sh), true, v, t)
	return v, t
}

func (l *Local[T]) insert(h uint64, key string, shape bool, v T, t *template[T]) {
	s := &l.sets[h&l.mask]
	s[1] = s[0]
	s[0] = localEntry[T]{hash: h, key: key, shape: shape, val: v, tmpl: t}
}
