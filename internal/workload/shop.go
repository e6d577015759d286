package workload

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
)

// The shop is the rehearsal demo's application: customers found by email,
// their orders summed, the orders of a range of customers reported, and
// pgbench's own transactions, run by pgbench at a steady rate. Its lookup by email depends on one index, which a
// candidate server can lose on purpose to show a regression.

// ShopDatabase holds the shop's tables and pgbench's.
const ShopDatabase = "shop"

// ShopCustomers is how many customers the shop has.
const ShopCustomers = 50000

// shopScale is pgbench's scale for the shop: five branches, so that
// pgbench's own transactions rarely wait on each other's branch row; with
// one, a replay a little late on a busy machine queues on it and looks
// slower for reasons that are not the server's.
const shopScale = 5

// ShopEmailIndex is the index the email lookup needs.
const ShopEmailIndex = "customers_email_idx"

// shopSchema builds the same data on every server: generate_series and no
// randomness, so that a production and a candidate server start equal.
var shopSchema = `
CREATE TABLE customers (
	id         bigint PRIMARY KEY,
	email      text NOT NULL,
	name       text NOT NULL,
	created_at timestamptz NOT NULL
);
INSERT INTO customers
SELECT i, 'user' || i || '@example.com', 'Customer ' || i, '2026-01-01'::timestamptz + i * interval '1 minute'
FROM generate_series(1, ` + strconv.Itoa(ShopCustomers) + `) AS i;
CREATE INDEX ` + ShopEmailIndex + ` ON customers (email);
CREATE TABLE orders (
	id          bigint PRIMARY KEY,
	customer_id bigint NOT NULL,
	total       numeric(10,2) NOT NULL,
	created_at  timestamptz NOT NULL
);
INSERT INTO orders
SELECT i, 1 + (i * 7919) % ` + strconv.Itoa(ShopCustomers) + `, (i % 500) + 0.99, '2026-01-01'::timestamptz + i * interval '10 seconds'
FROM generate_series(1, 200000) AS i;
CREATE INDEX orders_customer_idx ON orders (customer_id);
`

// The shop's pgbench scripts; pgbench sends the \set values as parameters
// with -M extended or prepared, so the log holds them for the replay.
const (
	lookupScript = `\set n random(1, ` + "50000" + `)
SELECT id, name FROM customers WHERE email = 'user' || :n || '@example.com';
`
	ordersScript = `\set c random(1, 50000)
SELECT count(*), sum(total) FROM orders WHERE customer_id = :c;
`
	// rangeScript sums the orders of a hundred neighbouring customers:
	// some 400 rows spread over as many pages, which a server with a
	// small shared_buffers reads again on every call.
	rangeScript = `\set c random(1, 49900)
SELECT count(*), sum(total) FROM orders WHERE customer_id BETWEEN :c AND :c + 100;
`
)

// SetupShop creates the shop database, its data and pgbench's tables on
// c, without logging any of it: the setup is not part of the workload,
// and a server being rehearsed against gets the same setup instead.
func SetupShop(ctx context.Context, c *pgcluster.Cluster) error {
	if err := c.Exec(ctx, "postgres", "CREATE DATABASE "+ShopDatabase); err != nil {
		return err
	}
	// The load commits synchronously: a hint bit may not be set while
	// its transaction's commit record is not flushed, and the throwaway
	// servers commit asynchronously, so the VACUUM below could leave the
	// rows unhinted, and the rehearsal's reads would dirty their pages,
	// more on the server whose WAL writer came later (TestSetupShopHinted).
	if err := c.Exec(ctx, ShopDatabase, "SET synchronous_commit = on; SET log_min_duration_statement = -1; SET log_statement = 'none';"+shopSchema); err != nil {
		return fmt.Errorf("shop schema: %w", err)
	}
	// VACUUM cannot share a query string with other statements.
	if err := c.Exec(ctx, ShopDatabase, "VACUUM ANALYZE"); err != nil {
		return err
	}
	if _, err := c.PgbenchEnv(ctx, []string{"PGOPTIONS=-c log_min_duration_statement=-1 -c log_statement=none -c synchronous_commit=on"},
		"-i", "-q", "-s", strconv.Itoa(shopScale), ShopDatabase); err != nil {
		return err
	}
	return nil
}

// ShopRun is one run of the shop's traffic.
type ShopRun struct {
	Clients      int
	Rate         int // transactions per second pgbench aims at
	Duration     time.Duration
	Transactions int64
}

// RunShop runs the shop's traffic on c for d with pgbench -M prepared at
// a steady rate, below what the machine can do, as production traffic is.
func RunShop(ctx context.Context, c *pgcluster.Cluster, d time.Duration, rate int) (ShopRun, error) {
	return runShop(ctx, c, nil, d, rate)
}

// RunShopThrough is RunShop with pgbench connecting to host:port instead
// of c's socket: a proxy in front of c, such as a capture's.
func RunShopThrough(ctx context.Context, c *pgcluster.Cluster, host, port string, d time.Duration, rate int) (ShopRun, error) {
	return runShop(ctx, c, []string{"-h", host, "-p", port}, d, rate)
}

func runShop(ctx context.Context, c *pgcluster.Cluster, conn []string, d time.Duration, rate int) (ShopRun, error) {
	dir, err := os.MkdirTemp("", "pgrehearse-shop")
	if err != nil {
		return ShopRun{}, err
	}
	defer os.RemoveAll(dir)
	lookup := filepath.Join(dir, "lookup.sql")
	orders := filepath.Join(dir, "orders.sql")
	if err := os.WriteFile(lookup, []byte(lookupScript), 0o644); err != nil {
		return ShopRun{}, err
	}
	if err := os.WriteFile(orders, []byte(ordersScript), 0o644); err != nil {
		return ShopRun{}, err
	}
	ranges := filepath.Join(dir, "range.sql")
	if err := os.WriteFile(ranges, []byte(rangeScript), 0o644); err != nil {
		return ShopRun{}, err
	}
	run := ShopRun{Clients: 4, Rate: rate, Duration: d}
	// c.Pgbench names c's socket first: conn, after it, wins.
	args := append(conn, "-n", "-M", "prepared", "-c", strconv.Itoa(run.Clients), "-j", "2",
		"-T", strconv.Itoa(int(d.Seconds())), "-R", strconv.Itoa(rate), "--random-seed=7",
		"-f", lookup+"@3", "-f", orders+"@2", "-f", ranges+"@1", "-b", "tpcb-like@1", ShopDatabase)
	out, err := c.Pgbench(ctx, args...)
	if err != nil {
		return run, err
	}
	m := processed.FindSubmatch(out)
	if m == nil {
		return run, fmt.Errorf("pgbench: no transaction count in its output:\n%s", out)
	}
	run.Transactions, _ = strconv.ParseInt(string(m[1]), 10, 64)
	return run, nil
}
