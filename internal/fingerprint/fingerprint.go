package fingerprint

import (
	"fmt"
	"hash/fnv"
	"strings"
	"unicode/utf8"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// Item is one statement of a query text.
type Item struct {
	// Fingerprint is 16 lowercase hex digits: pg_query's fingerprint, or
	// for Unparsed text a hash of its masked tokens.
	Fingerprint string
	// Query is the normalized statement, constants replaced by $n.
	Query string
	// Unparsed is set when the text is not valid SQL to the parser.
	Unparsed bool

	// cls holds the statement's Class once asked for (see Item.Class),
	// shared by every copy of the Item.
	cls *classSlot
}

// MaxUnparsedQuery bounds the Query of an Unparsed item: such text is shown
// as logged, and a runaway string (a megabyte of VALUES with a typo) would
// otherwise be carried into every report.
const MaxUnparsedQuery = 2000

// emptyFingerprint is pg_query's fingerprint of a text with no statement
// (only comments or whitespace), which the fast path must recognize.
var emptyFingerprint = func() string {
	fp, _ := pg_query.Fingerprint("")
	return fp
}()

// Compute returns the statements of text, without caching. An empty text,
// or one holding only comments and semicolons, has no statement and yields
// nil.
func Compute(text string) []Item {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	// Most texts hold one statement. Without a semicolon anywhere there can
	// be at most one, so skip the split, which would parse the text once
	// more. A semicolon inside a literal merely takes the slow path.
	if !strings.Contains(text, ";") {
		fp, err := pg_query.Fingerprint(text)
		if err != nil {
			return []Item{unparsed(text)}
		}
		if fp == emptyFingerprint {
			return nil
		}
		return withSlots([]Item{{Fingerprint: fp, Query: normalize(text)}})
	}
	// The parser's split, not the scanner's: on invalid SQL the scanner
	// drops statements without an error ("select 1; selec 2" gives one
	// piece), while the parser fails the whole string, as the server does.
	pieces, err := pg_query.SplitWithParser(text, true)
	if err != nil {
		return []Item{unparsed(text)}
	}
	items := make([]Item, 0, len(pieces))
	for _, p := range pieces {
		fp, err := pg_query.Fingerprint(p)
		if err != nil {
			// The whole text parsed, so a piece cannot fail; if it
			// does, keep the count right with a fallback.
			items = append(items, unparsed(p))
			continue
		}
		if fp == emptyFingerprint {
			continue
		}
		items = append(items, Item{Fingerprint: fp, Query: normalize(p)})
	}
	if len(items) == 0 {
		return nil
	}
	return withSlots(items)
}

// withSlots gives each parsed Item the place its Class will be kept in,
// with one allocation for the text.
func withSlots(items []Item) []Item {
	slots := make([]classSlot, len(items))
	for i := range items {
		if !items[i].Unparsed {
			slots[i].i, slots[i].n = int32(i), int32(len(items))
			items[i].cls = &slots[i]
		}
	}
	return items
}

func normalize(text string) string {
	n, err := pg_query.Normalize(text)
	if err != nil {
		// Fingerprint parsed the same text, so this cannot happen;
		// the text itself is the best stand-in.
		return collapse(text)
	}
	return strings.TrimSpace(n)
}

// unparsed makes the fallback item for text the parser rejects. The
// fingerprint hashes the token sequence with constants masked, so that one
// faulty statement sent with many different values still makes one group,
// as it would if it parsed. Text the scanner also rejects (an unterminated
// quote) is hashed with its whitespace collapsed.
func unparsed(text string) Item {
	norm, ok := maskTokens(text)
	if !ok {
		norm = collapse(text)
	}
	h := fnv.New64a()
	h.Write([]byte("unparsed\x00")) // keep clear of any fingerprint of parsed text
	h.Write([]byte(norm))
	return Item{
		Fingerprint: fmt.Sprintf("%016x", h.Sum64()),
		Query:       truncate(norm, MaxUnparsedQuery),
		Unparsed:    true,
	}
}

// maskTokens rebuilds text from its tokens, constants replaced by $n,
// comments dropped and any gap between tokens made a single space.
func maskTokens(text string) (string, bool) {
	res, err := pg_query.Scan(text)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	b.Grow(len(text))
	param := 0
	prevEnd := int32(-1)
	for _, t := range res.GetTokens() {
		switch t.Token {
		case pg_query.Token_SQL_COMMENT, pg_query.Token_C_COMMENT:
			continue
		}
		if t.Start < 0 || t.End > int32(len(text)) || t.Start > t.End {
			return "", false
		}
		if prevEnd >= 0 && t.Start > prevEnd {
			b.WriteByte(' ')
		}
		prevEnd = t.End
		switch t.Token {
		case pg_query.Token_SCONST, pg_query.Token_USCONST, pg_query.Token_ICONST,
			pg_query.Token_FCONST, pg_query.Token_BCONST, pg_query.Token_XCONST:
			param++
			fmt.Fprintf(&b, "$%d", param)
		default:
			b.WriteString(text[t.Start:t.End])
		}
	}
	if b.Len() == 0 {
		return "", false
	}
	return b.String(), true
}

// collapse trims text and turns every run of whitespace into one space.
func collapse(text string) string {
	return strings.Join(strings.Fields(text), " ")
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
