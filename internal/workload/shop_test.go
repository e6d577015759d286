package workload

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestSetupShopHinted: after SetupShop, the shop's reads dirty no block.
// The throwaway clusters commit asynchronously (synchronous_commit off),
// and a hint bit may not be set while its transaction's commit record is
// not flushed: a VACUUM right after the load then leaves the rows
// unhinted, and the rounds' first reads of each page dirty it, on one
// side or both depending on when the WAL writer ran. On a busy machine
// that differed between two identical servers and failed an A/A
// rehearsal on blocks dirtied by reads of orders (issue 44).
func TestSetupShopHinted(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	if err := SetupShop(ctx, c); err != nil {
		t.Fatal(err)
	}
	conn := pgclustertest.Connect(ctx, t, c.DSN(ShopDatabase))
	defer conn.Close(ctx)
	for _, q := range []string{
		"SELECT count(*), sum(total) FROM orders WHERE customer_id BETWEEN 1 AND 5000",
		"SELECT count(*) FROM customers WHERE email LIKE 'user1%'",
	} {
		rows, err := conn.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) "+q)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		plan := strings.Join(lines, "\n")
		if strings.Contains(plan, "dirtied=") {
			t.Errorf("%s dirtied blocks right after the setup:\n%s", q, plan)
		}
	}
}
