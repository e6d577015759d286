package batch

import (
	"io"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
)

type events struct{ evs []*event.Event }

func (s *events) Next() (*event.Event, error) {
	if len(s.evs) == 0 {
		return nil, io.EOF
	}
	ev := s.evs[0]
	s.evs = s.evs[1:]
	return ev, nil
}

// st is a statement of session a (or of the session before a colon:
// "b:SELECT 1"), lasting 10 µs.
func st(q string) *event.Event {
	session := "a"
	if i := strings.Index(q, ":"); i == 1 {
		session, q = q[:1], q[2:]
	}
	return &event.Event{Kind: event.Statement, Session: session, Query: q, Duration: 10}
}

func exec(q string, params ...string) *event.Event {
	ev := &event.Event{Kind: event.Execute, Session: "a", Query: q, Name: "s1", Duration: 10}
	for _, p := range params {
		ev.Params = append(ev.Params, event.Param{Value: p})
	}
	return ev
}

func ins(v string) *event.Event { return st("INSERT INTO events (a) VALUES (" + v + ")") }

func TestSource(t *testing.T) {
	failed := ins("9")
	failed.Failed = true
	for _, tc := range []struct {
		name string
		max  int
		in   []*event.Event
		// out: each event's session and query; merged ones' params.
		out              []string
		batches, rows    int64
		statements       int64
		notBatched       map[string]int64
		params, duration []string
	}{
		{
			name: "an autocommit run, in batches of 2", max: 2,
			in:      []*event.Event{ins("1"), ins("2"), ins("3"), ins("4"), ins("5")},
			out:     []string{"a INSERT INTO events (a) VALUES (1), (2)", "a INSERT INTO events (a) VALUES (3), (4)", "a INSERT INTO events (a) VALUES (5)"},
			batches: 3, rows: 5, statements: 5,
		},
		{
			name: "never across a transaction's end", max: 50,
			in:      []*event.Event{st("BEGIN"), ins("1"), ins("2"), st("COMMIT"), ins("3"), ins("4")},
			out:     []string{"a BEGIN", "a INSERT INTO events (a) VALUES (1), (2)", "a COMMIT", "a INSERT INTO events (a) VALUES (3), (4)"},
			batches: 2, rows: 4, statements: 4,
		},
		{
			name: "other sessions' statements do not break a batch and wait behind it", max: 50,
			in:      []*event.Event{ins("1"), st("b:SELECT 1"), ins("2"), st("b:INSERT INTO events (a) VALUES (7)"), st("SELECT 2")},
			out:     []string{"a INSERT INTO events (a) VALUES (1), (2)", "b SELECT 1", "b INSERT INTO events (a) VALUES (7)", "a SELECT 2"},
			batches: 2, rows: 3, statements: 3,
		},
		{
			name: "another column list, a failed row, RETURNING: each ends the batch", max: 50,
			in: []*event.Event{ins("1"), st("INSERT INTO events (b) VALUES (1)"), ins("2"), failed, ins("3"),
				st("INSERT INTO events (a) VALUES (4) RETURNING a"), ins("5"), ins("6")},
			out: []string{"a INSERT INTO events (a) VALUES (1)", "a INSERT INTO events (b) VALUES (1)", "a INSERT INTO events (a) VALUES (2)",
				"a INSERT INTO events (a) VALUES (9)", "a INSERT INTO events (a) VALUES (3)", "a INSERT INTO events (a) VALUES (4) RETURNING a",
				"a INSERT INTO events (a) VALUES (5), (6)"},
			batches: 5, rows: 6, statements: 6,
			notBatched: map[string]int64{string(NotBatchedFailed): 1, string(fingerprint.NotBatchableReturning): 1},
		},
		{
			name: "bind parameters, a Parse between", max: 50,
			in: []*event.Event{exec("INSERT INTO events (a, b) VALUES ($1, $2)", "1", "x"),
				{Kind: event.Prepare, Session: "a", Query: "INSERT INTO events (a, b) VALUES ($1, $2)"},
				exec("INSERT INTO events (a, b) VALUES ($1, $2)", "2", "y")},
			out:     []string{"a INSERT INTO events (a, b) VALUES ($1, $2), ($3, $4)", "a INSERT INTO events (a, b) VALUES ($1, $2)"},
			batches: 1, rows: 2, statements: 2,
			params: []string{"1", "x", "2", "y"}, duration: []string{"20"},
		},
		{
			name: "counted, not merged", max: 1,
			in:      []*event.Event{ins("1"), ins("2")},
			out:     []string{"a INSERT INTO events (a) VALUES (1)", "a INSERT INTO events (a) VALUES (2)"},
			batches: 2, rows: 2, statements: 2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(&events{evs: tc.in}, tc.max)
			var out []string
			var merged *event.Event
			for ev, err := range event.All(s) {
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, ev.Session+" "+ev.Query)
				if strings.Contains(ev.Query, "), (") {
					merged = ev
				}
			}
			if strings.Join(out, "\n") != strings.Join(tc.out, "\n") {
				t.Errorf("events\n%s\nwant\n%s", strings.Join(out, "\n"), strings.Join(tc.out, "\n"))
			}
			c := s.Counts()
			if c.Batches != tc.batches || c.Rows != tc.rows || c.Statements != tc.statements || c.Max != tc.max {
				t.Errorf("counts %+v, want %d batches, %d rows, %d statements, max %d", c, tc.batches, tc.rows, tc.statements, tc.max)
			}
			if len(c.NotBatched) != len(tc.notBatched) {
				t.Errorf("not batched %v, want %v", c.NotBatched, tc.notBatched)
			}
			for k, v := range tc.notBatched {
				if c.NotBatched[k] != v {
					t.Errorf("not batched %v, want %v", c.NotBatched, tc.notBatched)
				}
			}
			if tc.params != nil {
				var got []string
				for _, p := range merged.Params {
					got = append(got, p.Value)
				}
				if strings.Join(got, ",") != strings.Join(tc.params, ",") || merged.Name != "" || merged.Duration != 20 {
					t.Errorf("merged params %v name %q duration %d, want %v, unnamed, 20", got, merged.Name, merged.Duration, tc.params)
				}
			}
			if tc.max > 1 && c.Tables["events"] != tc.rows {
				t.Errorf("tables %v, want %d rows into events", c.Tables, tc.rows)
			}
		})
	}
}

// TestSourceHoldsBounded: a batch left open by an idle session is sent
// once MaxQueued events wait behind it.
func TestSourceHoldsBounded(t *testing.T) {
	in := []*event.Event{ins("1")}
	for range MaxQueued + 5 {
		in = append(in, st("b:SELECT 1"))
	}
	in = append(in, ins("2"))
	s := New(&events{evs: in}, 50)
	ev, err := s.Next()
	if err != nil || ev.Query != "INSERT INTO events (a) VALUES (1)" {
		t.Fatalf("first event %v, %v; want the first row alone", ev, err)
	}
	if got := len(s.queue) - s.head; got > MaxQueued+1 {
		t.Errorf("%d events held, want at most %d", got, MaxQueued+1)
	}
}
