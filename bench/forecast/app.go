package main

import (
	"regexp"
	"strconv"
	"strings"
)

// The application: a shop's customers and orders, as the demo's shop
// (internal/workload) builds them, with an order status and orders
// spread over 69 days (their created_at not in insert order, so that a
// range of days reads pages all over the table), and four pgbench
// scripts, one statement each, so that a transaction type is a query.

// shopDB is the application's database.
const shopDB = "shop"

// emailIndex is the index the lookup by email uses; the dropped-index
// change drops it on the candidate.
const emailIndex = "customers_email_idx"

// The shop's rows at scale 1 (-scale multiplies them): about 85 MB of
// tables and indexes.
const (
	customersPerScale = 50000
	ordersPerScale    = 600000
)

// shopSchema builds the same data on every server: generate_series and no
// randomness, so that the production, the control and the candidate
// start equal.
func shopSchema(customers, orders int) string {
	return `
CREATE TABLE customers (
	id         bigint PRIMARY KEY,
	email      text NOT NULL,
	name       text NOT NULL,
	created_at timestamptz NOT NULL
);
INSERT INTO customers
SELECT i, 'user' || i || '@example.com', 'Customer ' || i, '2026-01-01'::timestamptz + i * interval '1 minute'
FROM generate_series(1, ` + strconv.Itoa(customers) + `) AS i;
CREATE INDEX ` + emailIndex + ` ON customers (email);
CREATE TABLE orders (
	id          bigserial PRIMARY KEY,
	customer_id bigint NOT NULL,
	total       numeric(10,2) NOT NULL,
	status      text NOT NULL,
	created_at  timestamptz NOT NULL
);
INSERT INTO orders (id, customer_id, total, status, created_at)
SELECT i, 1 + (i::bigint * 7919) % ` + strconv.Itoa(customers) + `, (i % 500) + 0.99,
	(ARRAY['new', 'paid', 'shipped', 'delivered'])[1 + i % 4],
	'2026-01-01'::timestamptz + ((i::bigint * 7919) % ` + strconv.Itoa(orders) + `) * interval '10 seconds'
FROM generate_series(1, ` + strconv.Itoa(orders) + `) AS i;
SELECT setval('orders_id_seq', ` + strconv.Itoa(orders) + `);
CREATE INDEX orders_created_idx ON orders (created_at);
CREATE INDEX orders_customer_idx ON orders (customer_id);
`
}

// kind is one of an application's queries. In the shop it is also its
// transaction type (one pgbench script each); in an application whose
// transactions hold several statements (txs) it is one of them.
type kind struct {
	name   string
	weight int
	script string
	// match finds the query in pg_stat_statements' text and in the
	// report's (lower case, spaces collapsed).
	match string
}

// shopKinds are the shop's queries in the order of pgbench's -f
// options: a transaction's script number in pgbench's log indexes it.
func shopKinds(customers, orders int) []kind {
	// reportDays is how many whole days the orders span (10 s apart).
	reportDays := orders * 10 / 86400
	return []kind{
		{name: "lookup by email", weight: 10, match: "from customers where email",
			script: `\set n random(1, ` + strconv.Itoa(customers) + `)
SELECT id, name FROM customers WHERE email = 'user' || :n || '@example.com';
`},
		{name: "order insert", weight: 5, match: "insert into orders",
			script: `\set c random(1, ` + strconv.Itoa(customers) + `)
\set t random(1, 500)
INSERT INTO orders (customer_id, total, status, created_at) VALUES (:c, :t + 0.99, 'new', now());
`},
		{name: "status update", weight: 5, match: "update orders set status",
			script: `\set id random(1, ` + strconv.Itoa(orders) + `)
UPDATE orders SET status = 'shipped' WHERE id = :id;
`},
		{name: "report by day", weight: 1, match: "group by customer_id",
			script: `\set d random(0, ` + strconv.Itoa(reportDays-1) + `)
SELECT customer_id, count(*), sum(total) FROM orders
WHERE created_at >= '2026-01-01'::timestamptz + :d::int * interval '1 day'
  AND created_at < '2026-01-01'::timestamptz + (:d::int + 1) * interval '1 day'
GROUP BY customer_id ORDER BY 3 DESC LIMIT 10;
`},
	}
}

var spaces = regexp.MustCompile(`\s+`)

// kindOf returns the index in a.kinds of the query whose text is sql, or
// -1 for a statement that is not the application's.
func (a *application) kindOf(sql string) int {
	s := strings.ToLower(spaces.ReplaceAllString(sql, " "))
	for i, k := range a.kinds {
		if strings.Contains(s, k.match) {
			return i
		}
	}
	return -1
}

// change is one difference of the candidate from the control.
type change struct {
	name  string
	about string
	// settings are the candidate's, over the control's.
	settings map[string]string
	// sql runs on the candidate's database once its data is built, by
	// database (application.db): a change with sql applies only to the
	// applications whose database it names.
	sql map[string]string
	// pg18 runs the candidate on PostgreSQL 18's binaries.
	pg18 bool
	// cpuFraction runs the candidate's server under a CPU quota of
	// this fraction of the control's CPUs (0: none).
	cpuFraction float64
	// upgrade builds the candidate on the control's major and moves
	// its data to the new major's (-upgrade-bin) with pg_upgrade.
	upgrade bool
	// memLimit runs the candidate's server under a memory limit that
	// includes its page cache (-mem-limit), below the data set.
	memLimit bool
}

// appliesTo says whether the change can be made for a: a change of
// the data names the databases it knows.
func (c change) appliesTo(a *application) bool {
	if c.sql == nil {
		return true
	}
	_, ok := c.sql[a.db]
	return ok
}

var changes = []change{
	{name: "dropped-index", about: "the candidate lacks " + emailIndex + ", the lookup by email's index", sql: map[string]string{shopDB: "DROP INDEX " + emailIndex}},
	{name: "work-mem", about: "the candidate runs with work_mem = 64kB", settings: map[string]string{"work_mem": "64kB"}},
	{name: "shared-buffers", about: "the candidate runs with shared_buffers = 16MB", settings: map[string]string{"shared_buffers": "16MB"}},
	{name: "random-page-cost", about: "the candidate runs with random_page_cost = 50", settings: map[string]string{"random_page_cost": "50"}},
	{name: "pg18", about: "the candidate runs PostgreSQL 18 (the control 15), with the same data", pg18: true},
	{name: "none", about: "the candidate is identical"},
	{name: "half-cpu", about: "the candidate's server runs under a CPU quota of half the control's CPUs (cgroup cpu.cfs_quota_us)", cpuFraction: 0.5},
	{name: "pg-upgrade", about: "the candidate's data upgraded to the new major (-upgrade-bin) with pg_upgrade, statistics as it leaves them (no ANALYZE after): the new major may plan differently until ANALYZE", upgrade: true},
	{name: "faster", about: "the candidate has a covering index for the report by day (an index-only scan)",
		sql: map[string]string{shopDB: "CREATE INDEX orders_created_covering_idx ON orders (created_at) INCLUDE (customer_id, total); ANALYZE orders"}},
	// About 2x the hot update's server time (0.009 ms against 0.016-0.019
	// over pgbench runs of 8 s, 2 clients, on a busy machine): a
	// regression of that size for the busy machine's acceptance line.
	{name: "update-trigger", about: "the candidate's accounts have a BEFORE UPDATE trigger (PL/pgSQL) that stamps updated_at: about 2x the hot update's server time",
		sql: map[string]string{"hotrow": updateTrigger}},
	// COMMIT's round trip holds the WAL flush (issue 76): the servers run
	// with synchronous_commit and fsync off (pgcluster's defaults); the
	// candidate flushes and syncs at each commit: COMMIT's round trip 2x
	// or more, by the disk's sync; no other statement's server time
	// moves.
	{name: "commit-flush", about: "the candidate flushes the WAL to disk at each commit (synchronous_commit = on, fsync = on): COMMIT's round trip 2x or more, by the disk",
		settings: map[string]string{"synchronous_commit": "on", "fsync": "on"}},
	{name: "mem-limit", about: "the candidate's server runs under a memory limit, page cache included, below the data set (cgroup memory.limit_in_bytes)", memLimit: true},
}

func changeNames() []string {
	var names []string
	for _, c := range changes {
		names = append(names, c.name)
	}
	return names
}

// updateTrigger is the update-trigger change's SQL (hotrow and hotcpu's
// database).
const updateTrigger = `CREATE FUNCTION accounts_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	NEW.updated_at := clock_timestamp();
	RETURN NEW;
END $$;
CREATE TRIGGER accounts_stamp BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION accounts_stamp()`
