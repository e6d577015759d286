package replayrun

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/findings"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/replay"
	"github.com/pgrehearse/pgrehearse/internal/source"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// TestRunFindingsExplainRealStatements (issue 45): a replay whose result
// keeps no samples explains, for its findings, a statement whose
// normalized text does not prepare ("interval $2") with an execution
// read from its log: missing-index names the scan, and no query is "not
// explained" for a syntax error at a placeholder.
func TestRunFindingsExplainRealStatements(t *testing.T) {
	functionalCase(t)
	ctx := context.Background()
	const schema = `CREATE TABLE events (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, kind int NOT NULL, due timestamptz NOT NULL);
		INSERT INTO events (kind, due) SELECT g % 1000, now() - g * interval '1 second' FROM generate_series(1, 200000) g;
		ANALYZE events`
	a := pgclustertest.StartT(t, pgcluster.Options{Settings: workload.LogSettings()})
	b := pgclustertest.StartT(t, pgcluster.Options{})
	for _, c := range []*pgcluster.Cluster{a, b} {
		pgclustertest.Exec(t, c, "postgres", schema)
	}
	conn, err := pgconn.Connect(ctx, a.DSN("postgres")+" application_name=shop")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		q := fmt.Sprintf("SELECT count(*) FROM events WHERE kind = %d AND due < now() + random() * interval '%d minutes'", i, i+1)
		if _, err := conn.Exec(ctx, q).ReadAll(); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close(ctx)
	log := pgclustertest.StoppedLog(t, a)

	o, err := Run(ctx, Config{
		Input:      source.Paths{log},
		Selection:  source.Selection{Applications: []string{"shop"}},
		Replay:     replay.Options{Target: b.DSN("postgres"), Speed: 0},
		Findings:   true,
		MaxSkipped: 0.1, MaxErrorRate: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if o.Findings == nil || o.FindingsErr != nil {
		t.Fatalf("findings %v: %v", o.Findings, o.FindingsErr)
	}
	if len(o.Result.Samples) != 0 {
		t.Fatalf("the result kept %d samples, asked for none", len(o.Result.Samples))
	}
	var scan *findings.Finding
	for i, f := range o.Findings.Findings {
		if f.ID == findings.IDMissingIndex && strings.HasPrefix(f.Subject, "public.events") {
			scan = &o.Findings.Findings[i]
		}
	}
	for _, s := range o.Findings.NotEvaluated {
		if s.ID == findings.IDMissingIndex && strings.Contains(s.Reason, "not explained") {
			t.Errorf("not explained: %s", s.Reason)
		}
	}
	if scan == nil {
		t.Fatalf("missing-index does not name the scan of events: %+v\nnot evaluated: %+v", o.Findings.Findings, o.Findings.NotEvaluated)
	}
	if row := strings.Join(scan.Evidence.Tables[0].Rows[0], " | "); strings.Contains(row, "minutes") || strings.Contains(row, "00:0") {
		t.Errorf("the finding shows the example's values: %s", row)
	}
}
