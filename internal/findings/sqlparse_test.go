package findings

import "testing"

func TestQueuePattern(t *testing.T) {
	for _, c := range []struct {
		q    string
		want string
	}{
		{"SELECT id FROM jobs WHERE done = false ORDER BY id LIMIT 10 FOR UPDATE", patternSelectForUpdate},
		{"SELECT id FROM jobs WHERE done = false ORDER BY id LIMIT $1 FOR NO KEY UPDATE", patternSelectForUpdate},
		{"SELECT id FROM jobs WHERE done = false ORDER BY id LIMIT 10 FOR UPDATE SKIP LOCKED", ""},
		{"SELECT id FROM jobs WHERE done = false LIMIT 10 FOR UPDATE NOWAIT", ""},
		{"SELECT id FROM jobs WHERE id = 1 FOR UPDATE", ""}, // no LIMIT: a row lock, not a poll
		{"UPDATE jobs SET taken = now() WHERE id IN (SELECT id FROM jobs WHERE taken IS NULL LIMIT 10)", patternUpdateSubquery},
		{"UPDATE jobs SET taken = now() WHERE id IN (SELECT id FROM jobs WHERE taken IS NULL LIMIT 10 FOR UPDATE)", patternUpdateSubquery},
		{"UPDATE jobs SET taken = now() FROM (SELECT id FROM jobs WHERE taken IS NULL ORDER BY id LIMIT 1000 FOR UPDATE SKIP LOCKED) c WHERE jobs.id = c.id RETURNING jobs.id", ""},
		{"UPDATE jobs SET taken = now() FROM (SELECT id FROM jobs WHERE taken IS NULL ORDER BY id LIMIT 1000 FOR UPDATE) c WHERE jobs.id = c.id", patternUpdateSubquery},
		{"WITH c AS (SELECT id FROM jobs LIMIT 5 FOR UPDATE) DELETE FROM jobs USING c WHERE jobs.id = c.id", patternUpdateSubquery},
		{"UPDATE jobs SET taken = now() WHERE id = $1", ""},
		{"not sql at all", ""},
	} {
		if got := queuePattern(c.q); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.q, got, c.want)
		}
	}
}

func TestParseInsert(t *testing.T) {
	s := parseInsert("INSERT INTO app.events (id, body) VALUES ($1, 'x'::text)")
	if s == nil || s.Qualified() != "app.events" || s.Rows != 1 || len(s.Columns) != 2 {
		t.Fatalf("shape: %+v", s)
	}
	v := "0190f0f2-0000-7000-8000-000000000000"
	if got, ok := s.value(0, []*string{&v}); !ok || got != v {
		t.Errorf("value 0: %q %v", got, ok)
	}
	if got, ok := s.value(1, nil); !ok || got != "x" {
		t.Errorf("value 1: %q %v", got, ok)
	}
	if s := parseInsert("INSERT INTO t VALUES (1), (2), (3)"); s == nil || s.Rows != 3 || s.Columns != nil {
		t.Errorf("multi-row: %+v", s)
	}
	if s := parseInsert("INSERT INTO t SELECT * FROM u"); s == nil || s.Rows != 0 {
		t.Errorf("insert select: %+v", s)
	}
	if parseInsert("SELECT 1") != nil {
		t.Error("a SELECT is not an INSERT")
	}
}
