package fingerprint

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

var hex16 = regexp.MustCompile(`^[0-9a-f]{16}$`)

func TestCompute(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		queries  []string // normalized text of each item
		unparsed bool
	}{
		{"single", "SELECT * FROM t WHERE id = 42", []string{"SELECT * FROM t WHERE id = $1"}, false},
		{"trailing semicolon", "SELECT 1;", []string{"SELECT $1"}, false},
		{"transaction in one string", "BEGIN; SELECT 1; COMMIT",
			[]string{"BEGIN", "SELECT $1", "COMMIT"}, false},
		{"empty statements between", "SELECT 1;;SELECT 2", []string{"SELECT $1", "SELECT $1"}, false},
		{"semicolon in a literal", "SELECT 'a;b'", []string{"SELECT $1"}, false},
		{"function body with semicolons",
			"CREATE FUNCTION f() RETURNS int AS $$ select 1; $$ LANGUAGE sql; SELECT 3",
			[]string{"CREATE FUNCTION f() RETURNS int AS $1 LANGUAGE sql", "SELECT $1"}, false},
		{"extended protocol parameters", "SELECT * FROM t WHERE a = $1 AND b = $2",
			[]string{"SELECT * FROM t WHERE a = $1 AND b = $2"}, false},
		{"empty", "", nil, false},
		{"whitespace", " \n\t", nil, false},
		{"comment only", "-- nothing", nil, false},
		{"semicolons only", ";;", nil, false},
		{"syntax error", "SELEC 1", []string{"SELEC $1"}, true},
		{"syntax error in second statement fails the string", "select 1; selec 'x'",
			[]string{"select $1; selec $2"}, true},
		{"unterminated quote", "select  'abc", []string{"select 'abc"}, true},
		{"syntax error, comments dropped", "SELEC /* c */ 1, 'x' -- end", []string{"SELEC $1, $2"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items := Compute(tt.text)
			var got []string
			for _, it := range items {
				got = append(got, it.Query)
				if !hex16.MatchString(it.Fingerprint) {
					t.Errorf("fingerprint %q is not 16 hex digits", it.Fingerprint)
				}
				if it.Unparsed != tt.unparsed {
					t.Errorf("Unparsed = %v, want %v", it.Unparsed, tt.unparsed)
				}
			}
			if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tt.queries) {
				t.Errorf("queries = %q, want %q", got, tt.queries)
			}
		})
	}
}

func TestSameFingerprint(t *testing.T) {
	// Each row holds texts the server would count as one query.
	groups := [][]string{
		{"SELECT * FROM t WHERE id = 1", "select *  from t\nwhere id = 99", "SELECT * FROM t WHERE id = $1"},
		{"INSERT INTO t (a, b) VALUES (1, 'x')", "INSERT INTO t (a, b) VALUES (2, 'yy')"},
		{"SELECT 1; ", "SELECT 2"},
		{"SELEC * FROM t WHERE id = 1", "SELEC * FROM t WHERE id = 2", "SELEC *\n FROM t WHERE id = 'x'"},
	}
	var seen []string
	for _, g := range groups {
		fp := Compute(g[0])[0].Fingerprint
		for _, text := range g[1:] {
			if got := Compute(text)[0].Fingerprint; got != fp {
				t.Errorf("%q: fingerprint %s, want %s as for %q", text, got, fp, g[0])
			}
		}
		for _, other := range seen {
			if other == fp {
				t.Errorf("group %q shares fingerprint %s with another group", g, fp)
			}
		}
		seen = append(seen, fp)
	}
	if Compute("SELECT a FROM t")[0].Fingerprint == Compute("SELECT b FROM t")[0].Fingerprint {
		t.Error("different columns give the same fingerprint")
	}
}

func TestUnparsedIsStable(t *testing.T) {
	text := "UPDATE t SET x = 1 WHER id = 3"
	a, b := Compute(text), Compute(text)
	if a[0] != b[0] {
		t.Errorf("two runs differ: %+v, %+v", a[0], b[0])
	}
	long := "SELEC '" + strings.Repeat("é", MaxUnparsedQuery) + "'"
	it := Compute(long)[0]
	if it.Query != "SELEC $1" {
		t.Errorf("masked long literal: %q", it.Query)
	}
	long = "SELEC '" + strings.Repeat("é", MaxUnparsedQuery) // unterminated: kept as text
	it = Compute(long)[0]
	if len(it.Query) > MaxUnparsedQuery || !strings.HasSuffix(it.Query, "...") {
		t.Errorf("long unparsed text not truncated: %d bytes", len(it.Query))
	}
}

// countingCache counts parser runs through the compute hook.
func countingCache(maxBytes int64) (*Cache, *atomic.Int64) {
	c := NewCache(maxBytes)
	var n atomic.Int64
	c.compute = func(s string) []Item {
		n.Add(1)
		return Compute(s)
	}
	return c, &n
}

func TestCacheHitsDoNotReparse(t *testing.T) {
	c, parses := countingCache(0)
	texts := []string{"SELECT 1", "BEGIN; SELECT 1; COMMIT", "SELEC 1", ""}
	for range 3 {
		for _, text := range texts {
			want := Compute(text)
			got := c.Get(text)
			if itemsText(got) != itemsText(want) {
				t.Errorf("Get(%q) = %v, want %v", text, got, want)
			}
		}
	}
	if got := parses.Load(); got != int64(len(texts)) {
		t.Errorf("parser ran %d times, want %d (once per distinct text)", got, len(texts))
	}
	st := c.Stats()
	// Entries: the four texts and the shape of "SELECT 1".
	if st.Misses != 4 || st.Hits != 8 || st.Entries != 5 {
		t.Errorf("stats = %+v, want 4 misses, 8 hits, 5 entries", st)
	}
}

func TestCacheStaysBounded(t *testing.T) {
	// A budget of a few entries per shard: a stream of distinct texts
	// must rotate generations instead of growing.
	c, parses := countingCache(numShards * 2 * 400)
	hot := "SELECT * FROM hot WHERE id = $1"
	for i := range 20000 {
		// Not DML, so no shape: every text is new to the cache.
		c.Get(fmt.Sprintf("SET application_name = 'a%d'", i))
		c.Get(hot)
	}
	st := c.Stats()
	if st.Rotations == 0 {
		t.Fatal("no rotation: the cache grew without bound")
	}
	if st.Entries > 2000 {
		t.Errorf("%d entries held, budget allows a few hundred", st.Entries)
	}
	// The hot text is used all along, so it must never have been dropped.
	if got := parses.Load(); got != 20001 {
		t.Errorf("parser ran %d times, want 20001: the hot text was evicted", got)
	}
}

func TestCacheConcurrent(t *testing.T) {
	c, parses := countingCache(0)
	texts := make([]string, 50)
	for i := range texts {
		texts[i] = fmt.Sprintf("SELECT * FROM t%d WHERE id = 1; SELECT 2", i)
	}
	want := make([][]Item, len(texts))
	for i, text := range texts {
		want[i] = Compute(text)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for r := range 200 {
				i := (g*7 + r) % len(texts)
				if got := c.Get(texts[i]); itemsText(got) != itemsText(want[i]) {
					t.Errorf("Get(%q) = %v, want %v", texts[i], got, want[i])
					return
				}
			}
		})
	}
	wg.Wait()
	// Concurrent misses on one text may both parse it; never more than
	// once per goroutine and text.
	if n := parses.Load(); n < int64(len(texts)) || n > int64(8*len(texts)) {
		t.Errorf("parser ran %d times for %d texts", n, len(texts))
	}
}

func TestShape(t *testing.T) {
	// Each group: texts that must share a shape; texts in different
	// groups must not.
	groups := [][]string{
		{"SELECT * FROM t WHERE id = 1", "SELECT * FROM t WHERE id = 22", "SELECT * FROM t WHERE id = 1.5e-3", "SELECT * FROM t WHERE id = 0x1F", "SELECT * FROM t WHERE id = .5", "SELECT * FROM t WHERE id = 1_000"},
		{"select * from t where id = 1", "select * from t where id = 'x'"},
		{"SELECT * FROM t1 WHERE a = 'it''s' AND b = E'x\\'y'", "SELECT * FROM t1 WHERE a = 'b' AND b = E''"},
		{"SELECT * FROM t2 WHERE a = 'x'", "SELECT * FROM t2 WHERE a = $$x'y$$", "SELECT * FROM t2 WHERE a = $q$;$$$q$"},
		{`SELECT "col 1" FROM t WHERE x = 1 -- 'c' 2` + "\n", `SELECT "col 1" FROM t WHERE x = 2 -- 'c' 2` + "\n"},
		{"/* a /* nested */ 1 */ INSERT INTO t VALUES (1, 'a')", "/* a /* nested */ 1 */ INSERT INTO t VALUES (2, 'b')"},
		{"SELECT a FROM t WHERE b = $1 AND c = 3", "SELECT a FROM t WHERE b = $1 AND c = 4"},
		{"WITH x AS (SELECT 1) SELECT * FROM x", "WITH x AS (SELECT 2) SELECT * FROM x"},
		{"(SELECT 1)", "(SELECT 7)"},
	}
	noShape := []string{
		"SELECT * FROM t", // no constant: the exact cache suffices
		"SELECT 'unterminated",
		"SELECT 1abc",
		"SELECT $$open",
		"SELECT /* open comment 1",
		"COPY t FROM '/tmp/a'",
		"COMMENT ON TABLE t IS 'x'",
		"SET x = 1",
		"BEGIN; SELECT 1; COMMIT",
	}
	seen := map[string]int{}
	for g, texts := range groups {
		var first string
		for _, text := range texts {
			sh, ok := shape(text, nil)
			if !ok {
				t.Errorf("%q has no shape", text)
				continue
			}
			if first == "" {
				first = string(sh)
				if other, dup := seen[first]; dup {
					t.Errorf("groups %d and %d share a shape", other, g)
				}
				seen[first] = g
			} else if string(sh) != first {
				t.Errorf("%q: shape %q, want %q as for %q", text, sh, first, texts[0])
			}
			// What the shape promises: the same Items.
			if a, b := Compute(text), Compute(texts[0]); itemsText(a) != itemsText(b) {
				t.Errorf("same shape, different items: %q gives %v, %q gives %v", text, a, texts[0], b)
			}
		}
	}
	for _, text := range noShape {
		if sh, ok := shape(text, nil); ok {
			t.Errorf("%q has shape %q, want none", text, sh)
		}
	}
}

func TestCacheShapes(t *testing.T) {
	c, parses := countingCache(0)
	for i := range 100 {
		text := fmt.Sprintf("SELECT * FROM t WHERE id = %d AND name = 'n%d'", i, i)
		if got, want := c.Get(text), Compute(text); itemsText(got) != itemsText(want) {
			t.Fatalf("Get(%q) = %v, want %v", text, got, want)
		}
	}
	if n := parses.Load(); n != 1 {
		t.Errorf("parser ran %d times for 100 texts of one shape, want 1", n)
	}
	if st := c.Stats(); st.ShapeHits != 99 {
		t.Errorf("stats %+v, want 99 shape hits", st)
	}
}
