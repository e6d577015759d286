package replayrun

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/replay"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/source"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// eventsSchema is an events table with n partial indexes, as Heap's
// (every INSERT opens each index and evaluates each predicate).
func eventsSchema(n int) string {
	var b strings.Builder
	b.WriteString("CREATE TABLE events (id bigint PRIMARY KEY, kind int NOT NULL, body text);\n")
	for i := range n {
		fmt.Fprintf(&b, "CREATE INDEX events_kind_%d ON events (id) WHERE kind = %d;\n", i, i)
	}
	return b.String()
}

// eventsDigest is the events table's rows, as one digest.
func eventsDigest(t *testing.T, c *pgcluster.Cluster) string {
	t.Helper()
	conn, err := pgconn.Connect(context.Background(), c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	res, err := conn.Exec(context.Background(), "SELECT count(*) || ' ' || md5(string_agg(e::text, ',' ORDER BY id)) FROM events e").ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return string(res[0].Rows[0][0])
}

// captureEvents writes events row by row on a throwaway server that logs
// every statement: one session in autocommit, one in a transaction with
// a query amid its rows and a RETURNING, one with bind parameters.
func captureEvents(t *testing.T, indexes, rows int) (log, digest string) {
	t.Helper()
	ctx := context.Background()
	a := pgclustertest.StartT(t, pgcluster.Options{Settings: workload.LogSettings()})
	pgclustertest.Exec(t, a, "postgres", eventsSchema(indexes))
	conn := func() *pgconn.PgConn {
		c, err := pgconn.Connect(ctx, a.DSN("postgres")+" application_name=shop")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	exec := func(c *pgconn.PgConn, sql string) {
		if _, err := c.Exec(ctx, sql).ReadAll(); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	c := conn()
	for i := range rows {
		exec(c, fmt.Sprintf("INSERT INTO events (id, kind, body) VALUES (%d, %d, 'event %d')", i, i%indexes, i))
	}
	c.Close(ctx)
	c = conn()
	exec(c, "BEGIN")
	for i := rows; i < rows+30; i++ {
		exec(c, fmt.Sprintf("INSERT INTO events (id, kind, body) VALUES (%d, %d, 'it''s %d')", i, i%indexes, i))
	}
	exec(c, "SELECT count(*) FROM events")
	for i := rows + 30; i < rows+60; i++ {
		exec(c, fmt.Sprintf("INSERT INTO events (id, kind, body) VALUES (%d, %d, NULL)", i, i%indexes))
	}
	exec(c, fmt.Sprintf("INSERT INTO events (id, kind, body) VALUES (%d, 1, 'returned') RETURNING id", rows+60))
	exec(c, "COMMIT")
	c.Close(ctx)
	c = conn()
	for i := rows + 100; i < rows+200; i++ {
		args := [][]byte{[]byte(fmt.Sprint(i)), []byte(fmt.Sprint(i % indexes)), []byte(fmt.Sprintf("bound %d", i))}
		if _, err := c.ExecParams(ctx, "INSERT INTO events (id, kind, body) VALUES ($1, $2, $3)", args, nil, nil, nil).Close(); err != nil {
			t.Fatal(err)
		}
	}
	c.Close(ctx)
	digest = eventsDigest(t, a)
	return pgclustertest.StoppedLog(t, a), digest
}

// TestBatchInsertsMeasured: an events table with many partial indexes,
// written row by row, replayed in rounds with and without
// --batch-inserts 50 from the same empty table. Every round leaves the
// table the original left (the same rows, digest for digest), and the
// rounds give what batching saves per row, time and WAL, as a factor with
// its interval: batching saves. With PGREHEARSE_LONG, the 200 partial
// indexes of issue 48's acceptance.
func TestBatchInsertsMeasured(t *testing.T) {
	indexes, rows, rounds := 40, 1000, 3
	if os.Getenv("PGREHEARSE_LONG") != "" {
		indexes, rows, rounds = 200, 2000, 5
	}
	ctx := context.Background()
	log, want := captureEvents(t, indexes, rows)
	b := pgclustertest.StartT(t, pgcluster.Options{})
	pgclustertest.Exec(t, b, "postgres", eventsSchema(indexes))
	mergeable := int64(rows + 60 + 100)
	var plain, batched []*results.Result
	for i := range 2 * rounds {
		n := 1
		if i%2 == 1 {
			n = 50
		}
		pgclustertest.Exec(t, b, "postgres", "TRUNCATE events; CHECKPOINT")
		o, err := Run(ctx, Config{
			Input:        source.Paths{log},
			Selection:    source.Selection{Applications: []string{"shop"}},
			Replay:       replay.Options{Target: b.DSN("postgres"), Speed: 0},
			BatchInserts: n,
			MaxSkipped:   0.1, MaxErrorRate: 1,
		})
		if err != nil {
			t.Fatal(err)
		}
		res := o.Result
		if len(o.Reasons) != 0 || res.Statements.Failed != 0 {
			t.Fatalf("round %d: reasons %v, statements %+v", i, o.Reasons, res.Statements)
		}
		if got := eventsDigest(t, b); got != want {
			t.Fatalf("round %d (batches of %d): the table is %s, the original's %s", i, n, got, want)
		}
		c := res.BatchInserts
		switch {
		case c == nil:
			t.Fatalf("round %d: no batching counts", i)
		case c.Statements != mergeable || c.Rows != mergeable || c.Tables["events"] != mergeable:
			t.Errorf("round %d: %+v, want %d rows that could be batched", i, c, mergeable)
		case c.NotBatched[string(fingerprint.NotBatchableReturning)] != 1:
			t.Errorf("round %d: not batched %v, want the RETURNING", i, c.NotBatched)
		case c.WALBytes <= 0 || c.InsertMS <= 0:
			t.Errorf("round %d: WAL %d bytes, %.1f ms, want both measured", i, c.WALBytes, c.InsertMS)
		}
		if n == 1 {
			if c.Batches != mergeable {
				t.Errorf("round %d: %d statements sent for %d rows, want one each", i, c.Batches, mergeable)
			}
			plain = append(plain, res)
			continue
		}
		// The autocommit run in batches of 50, the transaction's two
		// runs of 30 apart, the bound rows in batches of 50.
		if want := int64((rows+49)/50 + 2 + 2); c.Batches != want {
			t.Errorf("round %d: %d batches, want %d", i, c.Batches, want)
		}
		batched = append(batched, res)
	}
	m, err := judge.BatchInserts(plain, batched, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d partial indexes, %d rows, %d rounds each way: time per row %s, WAL per row %v (batched: %.3f ms and %d bytes a row; one by one: %.3f ms, %d bytes)",
		indexes, mergeable, rounds, m.Time, m.WAL,
		batched[0].BatchInserts.InsertMS/float64(mergeable), batched[0].BatchInserts.WALBytes/mergeable,
		plain[0].BatchInserts.InsertMS/float64(mergeable), plain[0].BatchInserts.WALBytes/mergeable)
	if m.Max != 50 || m.Rounds != rounds || len(m.Tables) != 1 || m.Tables[0] != "events" {
		t.Errorf("measure %+v", m)
	}
	if m.Time.Low <= 1 {
		t.Errorf("batching saved no time per row: %s", m.Time)
	}
	if m.WAL == nil || m.WAL.Ratio <= 1 {
		t.Errorf("batching saved no WAL per row: %v", m.WAL)
	}

}
