package fingerprint

import (
	"fmt"
	"testing"
)

// TestStatementClass pins the answers the classifier gives the packages
// that used to parse for themselves: explain and catalog (Kind,
// PlainSelect, FuncNames), findings (Insert, Queue) and the replay's
// pre-flight (Creates).
func TestStatementClass(t *testing.T) {
	for _, c := range []struct {
		q    string
		want string
	}{
		{"SELECT * FROM t WHERE id = $1", "kind=1 plain=true queue=0 creates= funcs=[]"},
		{"WITH l AS (SELECT * FROM t FOR UPDATE) SELECT * FROM l", "kind=1 plain=false queue=0 creates= funcs=[]"},
		{"SELECT * FROM (SELECT * FROM t FOR SHARE) s", "kind=1 plain=false queue=0 creates= funcs=[]"},
		{"SELECT id FROM jobs ORDER BY id LIMIT 10 FOR UPDATE", "kind=1 plain=false queue=1 creates= funcs=[]"},
		{"SELECT id FROM jobs LIMIT 10 FOR UPDATE SKIP LOCKED", "kind=1 plain=false queue=0 creates= funcs=[]"},
		{"UPDATE jobs SET taken = now() WHERE id IN (SELECT id FROM jobs LIMIT 10)", "kind=3 plain=false queue=2 creates= funcs=[now]"},
		{"WITH c AS (SELECT id FROM jobs LIMIT 5 FOR UPDATE) DELETE FROM jobs USING c WHERE jobs.id = c.id", "kind=4 plain=false queue=2 creates= funcs=[]"},
		{"SELECT pg_catalog.lower(a), lower(b), x.y.z(1) FROM t", "kind=1 plain=true queue=0 creates= funcs=[lower z]"},
		{"MERGE INTO t USING u ON t.id = u.id WHEN MATCHED THEN DELETE", "kind=5 plain=false queue=0 creates= funcs=[]"},
		{"CREATE ROLE app LOGIN", "kind=0 plain=false queue=0 creates=role:app funcs=[]"},
		{"CREATE DATABASE shop", "kind=0 plain=false queue=0 creates=db:shop funcs=[]"},
		{"CREATE TABLE app.notes (id int)", "kind=0 plain=false queue=0 creates=rel:notes funcs=[]"},
		{"CREATE TABLE IF NOT EXISTS t AS SELECT 1", "kind=0 plain=false queue=0 creates=rel:t funcs=[]"},
		{"CREATE MATERIALIZED VIEW mv AS SELECT 1", "kind=0 plain=false queue=0 creates=rel:mv funcs=[]"},
		{"CREATE VIEW v AS SELECT 1", "kind=0 plain=false queue=0 creates=rel:v funcs=[]"},
		{"CREATE SEQUENCE s", "kind=0 plain=false queue=0 creates=rel:s funcs=[]"},
		{"CREATE TEMP TABLE tt (id int)", "kind=0 plain=false queue=0 creates= funcs=[]"},
	} {
		cl, err := Statement(c.q)
		if err != nil {
			t.Errorf("%s: %v", c.q, err)
			continue
		}
		got := fmt.Sprintf("kind=%d plain=%v queue=%d creates=%s funcs=%v", cl.Kind, cl.PlainSelect, cl.Queue, cl.Creates, cl.FuncNames())
		if got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.q, got, c.want)
		}
	}

	in, _ := Statement("INSERT INTO app.events (id, body, n, f, z) VALUES ($1, 'x'::text, 3, 1.5, NULL), (2, 'y', 4, 2.5, NULL)")
	if got := fmt.Sprintf("%+v", *in.Insert); got != "{Rel:{Schema:app Name:events} Columns:[id body n f z] Rows:2 Values:[{Param:1 Literal: IsLiteral:false} {Param:0 Literal:x IsLiteral:true} {Param:0 Literal:3 IsLiteral:true} {Param:0 Literal:1.5 IsLiteral:true} {Param:0 Literal: IsLiteral:false}]}" {
		t.Errorf("insert: %s", got)
	}

	if _, err := Statement("SELECT 1; SELECT 2"); err != ErrSeveral {
		t.Errorf("two statements: %v", err)
	}
	if _, err := Statement("SELECT FROM WHERE"); err == nil || err == ErrSeveral {
		t.Errorf("a syntax error: %v", err)
	}
	if cls, err := Statements("CREATE ROLE a; CREATE DATABASE b"); err != nil || len(cls) != 2 || cls[0].Creates != "role:a" || cls[1].Creates != "db:b" {
		t.Errorf("two creates: %v %v", cls, err)
	}
}

// TestStatementParsedOnce checks that a text is parsed once however many
// times, and through however many of the package's functions, it is
// asked about (explain asks Statement and AssignedColumns of one text).
func TestStatementParsedOnce(t *testing.T) {
	const q = "SELECT a FROM parsed_once_t WHERE b = $1"
	before := ClassParses()
	for range 3 {
		Classify(q)
		PlainSelect(q)
		Statement(q)
		AssignedColumns(q)
	}
	if n := ClassParses() - before; n != 1 {
		t.Errorf("parsed %d times, want 1", n)
	}
}

// TestItemCreates: an Item's Class (what the replay's pre-flight reads)
// names what a CREATE makes, also where the normalized text does not
// parse (PASSWORD $1) and the logged text is read instead.
func TestItemCreates(t *testing.T) {
	for text, want := range map[string][]string{
		"CREATE ROLE app LOGIN PASSWORD 'secret'":                 {"role:app"},
		"CREATE USER \"Web\" WITH PASSWORD 'x'":                   {"role:Web"},
		"CREATE DATABASE shop TEMPLATE template0 ENCODING 'UTF8'": {"db:shop"},
		"CREATE ROLE a; CREATE DATABASE b":                        {"role:a", "db:b"},
	} {
		var got []string
		for _, it := range Compute(text) {
			if c := it.Class(text).Creates; c != "" {
				got = append(got, c)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: %v, want %v", text, got, want)
		}
	}
}
