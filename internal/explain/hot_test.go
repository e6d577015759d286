package explain

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
)

// hotSchema is pgbench's accounts (fillfactor 90, as a table updated in
// place should have) and a few tables each made for one way an index can
// cover an updated column.
const hotSchema = `
CREATE TABLE accounts (aid int PRIMARY KEY, bid int, abalance int, filler char(84)) WITH (fillfactor = 90);
INSERT INTO accounts SELECT i, 1 + i / 1000, 0, '' FROM generate_series(1, 5000) i;
CREATE TABLE notset (aid int PRIMARY KEY, bid int, abalance int) WITH (fillfactor = 90);
INSERT INTO notset SELECT i, i % 10, 0 FROM generate_series(1, 1000) i;
CREATE TABLE users (id int PRIMARY KEY, email text, name text) WITH (fillfactor = 90);
INSERT INTO users SELECT i, 'u' || i || '@example.com', 'n' || i FROM generate_series(1, 1000) i;
CREATE TABLE items (id int PRIMARY KEY, sku text, qty int, note text) WITH (fillfactor = 90);
INSERT INTO items SELECT i, 's' || i, i % 7, '' FROM generate_series(1, 1000) i;
CREATE TABLE onctl (id int PRIMARY KEY, v int) WITH (fillfactor = 90);
INSERT INTO onctl SELECT i, 0 FROM generate_series(1, 1000) i;
CREATE TABLE same (id int PRIMARY KEY, v int) WITH (fillfactor = 90);
INSERT INTO same SELECT i, 0 FROM generate_series(1, 1000) i;
`

// TestIndexStopsHOT: an index only on the candidate that covers a column
// an UPDATE assigns (by key, expression, predicate or INCLUDE) is named
// as the cause, with the plans the same, and with both sides' update
// counters when both counted updates, even when they show no drop (they
// may predate the index); an index on a column not assigned and one on
// the control only are not causes.
func TestIndexStopsHOT(t *testing.T) {
	t.Parallel() // its own pair of servers
	p := startPair(t, nil, nil)
	p.both("postgres", hotSchema)
	p.exec(p.cand, "postgres", `
CREATE INDEX accounts_abalance_idx ON accounts (abalance);
CREATE INDEX notset_bid_idx ON notset (bid);
CREATE INDEX users_lower_email_idx ON users (lower(email));
CREATE INDEX items_sku_instock_idx ON items (sku) WHERE qty > 0;
CREATE INDEX items_sku_note_idx ON items (sku) INCLUDE (note);
CREATE INDEX same_v_idx ON same (v);`)
	p.exec(p.ctl, "postgres", "CREATE INDEX onctl_v_idx ON onctl (v)")
	p.both("postgres", "VACUUM ANALYZE")
	// Updates on both sides for the counters: of accounts, spread over
	// its pages (HOT on the control); of same, that change nothing
	// indexed (HOT on both sides).
	p.both("postgres", "UPDATE accounts SET abalance = abalance + 1 WHERE aid % 50 = 0; UPDATE same SET v = v WHERE id % 50 = 0")
	for _, c := range []*pgcluster.Cluster{p.ctl, p.cand} {
		waitUpdatesCounted(t, p, c, map[string]int64{"accounts": 100, "same": 20})
	}

	stmts := []Statement{
		{Fingerprint: "acc", Database: "postgres", Query: "UPDATE accounts SET abalance = abalance + $1 WHERE aid = $2"},
		{Fingerprint: "notset", Database: "postgres", Query: "UPDATE notset SET abalance = abalance + $1 WHERE aid = $2"},
		{Fingerprint: "expr", Database: "postgres", Query: "UPDATE users SET email = $1 WHERE id = $2"},
		{Fingerprint: "partial", Database: "postgres", Query: "UPDATE items SET qty = qty - 1 WHERE id = $1"},
		{Fingerprint: "include", Database: "postgres", Query: "INSERT INTO items (id, sku, note) VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE SET note = EXCLUDED.note"},
		{Fingerprint: "onctl", Database: "postgres", Query: "UPDATE onctl SET v = $1 WHERE id = $2"},
		{Fingerprint: "same", Database: "postgres", Query: "UPDATE same SET v = $1 WHERE id = $2"},
		{Fingerprint: "select", Database: "postgres", Query: "SELECT abalance FROM accounts WHERE aid = $1"},
	}
	rep := p.run(Options{Analyze: true}, stmts...)
	got := map[string]string{}
	for _, o := range rep.Outcomes {
		if o.Verdict != SamePlan {
			t.Errorf("%s: verdict %s %+v", o.Fingerprint, o.Verdict, o.Problems)
		}
		var hot []string
		for _, c := range o.Causes {
			if c.Kind == CauseIndexStopsHOT {
				hot = append(hot, fmt.Sprintf("%s on %s covers %s", c.Index, c.Relation, strings.Join(c.Columns, ",")))
			}
		}
		got[o.Fingerprint] = strings.Join(hot, "; ")
	}
	want := map[string]string{
		"acc":     "accounts_abalance_idx on accounts covers abalance",
		"notset":  "",
		"expr":    "users_lower_email_idx on users covers email",
		"partial": "items_sku_instock_idx on items covers qty",
		"include": "items_sku_note_idx on items covers note",
		"onctl":   "",
		"same":    "same_v_idx on same covers v",
		"select":  "",
	}
	for fp, w := range want {
		if got[fp] != w {
			t.Errorf("%s: causes %q, want %q", fp, got[fp], w)
		}
	}

	acc := rep.Outcomes[0].Causes[0]
	if acc.Side != Candidate || acc.Control != "" || acc.Candidate != "CREATE INDEX accounts_abalance_idx ON public.accounts USING btree (abalance)" {
		t.Errorf("accounts' cause: %+v", acc)
	}
	if h := acc.HOT; h == nil || h.ControlUpdates != 100 || h.CandidateUpdates != 100 || h.ControlHOT < 90 || h.CandidateHOT != 0 {
		t.Errorf("accounts' HOT counters: %+v", h)
	}
	if c := rep.Outcomes[2].Causes; len(c) == 0 || c[0].HOT != nil {
		t.Errorf("users were not updated: no counters expected, got %+v", c)
	}
	if c := rep.Outcomes[6].Causes; len(c) == 0 || c[0].HOT == nil || *c[0].HOT != (HOTUpdates{20, 20, 20, 20}) {
		t.Errorf("same: counters %+v", c)
	}

	// What the snapshot read of the indexes.
	items := rep.Candidate["postgres"].Relations["items"]
	for name, cols := range map[string][]string{"items_pkey": {"id"}, "items_sku_instock_idx": {"sku", "qty"}, "items_sku_note_idx": {"sku", "note"}} {
		if ix := items.Index(name); ix == nil || !slices.Equal(ix.Columns, cols) || ix.Summarizing {
			t.Errorf("%s: %+v, want columns %v", name, ix, cols)
		}
	}
	if ix := rep.Candidate["postgres"].Relations["users"].Index("users_lower_email_idx"); ix == nil || !slices.Equal(ix.Columns, []string{"email"}) {
		t.Errorf("expression index: %+v", ix)
	}
}

// waitUpdatesCounted polls until the server's statistics count want
// updates of each relation: a backend reports its counters when its
// transaction ends, not before Exec returns.
func waitUpdatesCounted(t *testing.T, p *pair, c *pgcluster.Cluster, want map[string]int64) {
	t.Helper()
	conn, err := pgx.Connect(p.ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(p.ctx)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok := true
		for rel, n := range want {
			var got int64
			// A new transaction each time: statistics are read once
			// per transaction.
			if err := conn.QueryRow(p.ctx, "SELECT coalesce(n_tup_upd, 0) FROM pg_stat_user_tables WHERE relname = $1", rel).Scan(&got); err != nil {
				t.Fatal(err)
			}
			ok = ok && got >= n
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("updates %v not counted after 30 s", want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
