package main

import (
	"fmt"
	"strconv"
	"strings"
)

// The application zoo (issue 76): each application is run open loop at a
// fixed arrival rate, as applications are, and gets its own production
// log, truth and forecast.

// application is one application of the zoo: its data, its queries and
// how pgbench runs it.
type application struct {
	name, about string
	// db is its database; schema builds its data, the same on every
	// server (generate_series, no randomness).
	db, schema string
	// kinds are its queries, found by their text in pg_stat_statements
	// and in the report.
	kinds []kind
	// txs are its transaction types (pgbench scripts), when a
	// transaction holds several of the kinds; nil: one script a kind
	// (kind.script, kind.weight), so that a transaction type is a query.
	txs []txType
	// pgbenchArgs are pgbench's options beyond the rate, the clients and
	// the scripts (the query mode; -C to connect per transaction).
	pgbenchArgs []string
	// perConnection says that the application connects for each
	// transaction: its rounds also keep pgbench's average connection
	// time, a row of its own at the application's level.
	perConnection bool
}

// txType is a transaction type of several statements: a pgbench script.
type txType struct {
	name   string
	weight int
	script string
}

// perStatement says whether the application's level is measured per
// statement (pgbench -r, from the transactions of several statements)
// rather than per transaction (pgbench -l, one statement each).
func (a *application) perStatement() bool { return len(a.txs) > 0 }

// scripts are the application's pgbench scripts in the order of
// pgbench's -f options, with their names and weights.
func (a *application) scripts() []txType {
	if a.perStatement() {
		return a.txs
	}
	var s []txType
	for _, k := range a.kinds {
		s = append(s, txType{name: k.name, weight: k.weight, script: k.script})
	}
	return s
}

// hotAccounts is how many rows the hot-row application's transactions
// update: few, so that they queue on each other's row locks.
const hotAccounts = 10

// hotThinkMS is the hot-row application's think time inside its
// transaction, between the row's lock and its update (client side, ms).
const hotThinkMS = 3

// newShop is the demo's shop, one statement a transaction, at scale
// (scale 1: customersPerScale customers, ordersPerScale orders).
func newShop(scale int) *application {
	c, o := customersPerScale*scale, ordersPerScale*scale
	return &application{
		name:        "shop",
		about:       "a shop's customers and orders, one statement a transaction",
		db:          shopDB,
		schema:      shopSchema(c, o),
		kinds:       shopKinds(c, o),
		pgbenchArgs: []string{"-M", "prepared"},
	}
}

// hotrow's transactions span several statements with think time inside
// them and update a few hot rows: each locks one of hotAccounts
// accounts, thinks hotThinkMS with the lock held, updates it and writes
// its history; beside them, reads of a cold account's balance.
var hotrow = newHotrow(false)

// hotcpu is hotrow with a CPU-costly read inside each transfer, with
// the row's lock held: the sum of hotRangeRows accounts' balances. At
// hotrow's rates its server used too little CPU for half a CPU to bind
// (11 of 596 periods throttled at 2,800 transactions/s,
// bench/results/2026-11-28-forecast-hotrow.md); hotcpu's does, so that a
// candidate with less CPU holds the hot rows' locks longer.
var hotcpu = newHotrow(true)

// hotRangeRows is how many accounts hotcpu's range read sums.
const hotRangeRows = 4000

// newHotrow builds hotrow, or hotcpu with rangeRead.
func newHotrow(rangeRead bool) *application {
	a := &application{
		name:  "hotrow",
		about: fmt.Sprintf("transactions of several statements that lock one of %d hot rows and think %d ms before updating it", hotAccounts, hotThinkMS),
		db:    "hotrow",
		schema: `
CREATE TABLE accounts (
	id         bigint PRIMARY KEY,
	balance    bigint NOT NULL,
	updated_at timestamptz NOT NULL
);
INSERT INTO accounts SELECT i, 1000, '2026-01-01' FROM generate_series(1, 100000) AS i;
CREATE TABLE account_history (
	id         bigserial PRIMARY KEY,
	account_id bigint NOT NULL,
	delta      bigint NOT NULL,
	at         timestamptz NOT NULL
);
`,
		kinds: []kind{
			{name: "hot lock", match: "for update"},
			{name: "hot update", match: "update accounts set balance"},
			{name: "history insert", match: "insert into account_history"},
			{name: "balance read", match: "select balance from accounts where id"},
		},
		pgbenchArgs: []string{"-M", "prepared"},
	}
	read, set := "", ""
	if rangeRead {
		a.name = "hotcpu"
		a.about = fmt.Sprintf("hotrow's transactions with a CPU-costly read (the sum of %d accounts' balances) while the hot row's lock is held", hotRangeRows)
		a.kinds = append(a.kinds, kind{name: "range read", match: "select sum(balance) from accounts"})
		set = `\set r random(1, ` + strconv.Itoa(100000-hotRangeRows) + `)
`
		read = `SELECT sum(balance) FROM accounts WHERE id BETWEEN :r AND :r + ` + strconv.Itoa(hotRangeRows-1) + `;
`
	}
	a.txs = []txType{
		{name: "transfer", weight: 4, script: `\set a random(1, ` + strconv.Itoa(hotAccounts) + `)
\set d random(-500, 500)
` + set + `BEGIN;
SELECT balance FROM accounts WHERE id = :a FOR UPDATE;
` + read + `\sleep ` + strconv.Itoa(hotThinkMS) + ` ms
UPDATE accounts SET balance = balance + :d, updated_at = now() WHERE id = :a;
INSERT INTO account_history (account_id, delta, at) VALUES (:a, :d, now());
COMMIT;
`},
		{name: "balance", weight: 6, script: `\set a random(1, 100000)
SELECT balance FROM accounts WHERE id = :a;
`},
	}
	return a
}

// newPercall connects for each transaction, as PHP or a serverless
// function does: the shop's data and queries at scale, a new connection
// a transaction. pgbench -C connects after a transaction's scheduled
// start and counts the connection in its schedule lag (at 50
// transactions/s, far from any queue, a mean lag of 7.8 ms beside an
// average connection time of 6.3 ms): latency less lag is the
// statement's alone, and the connection setup row carries the rest of
// what the application waited.
func newPercall(scale int) *application {
	a := newShop(scale)
	a.name, a.about = "percall", "the shop's queries, a new connection for each transaction"
	a.pgbenchArgs, a.perConnection = []string{"-M", "extended", "-C"}, true
	return a
}

// newZoo is every application at scale, in the order they run and
// render.
func newZoo(scale int) []*application {
	return []*application{newShop(scale), hotrow, newPercall(scale), hotcpu}
}

// shop is the shop at scale 1: its name and queries' texts, which do not
// depend on the scale, render a kept run.
var shop = newShop(1)

func appNames() []string {
	var names []string
	for _, a := range newZoo(1) {
		names = append(names, a.name)
	}
	return names
}

// appNamed returns the application called name at scale; nil for none.
func appNamed(name string, scale int) *application {
	for _, a := range newZoo(scale) {
		if a.name == name {
			return a
		}
	}
	return nil
}

// parseApps reads -apps: a comma-separated list of the zoo's names.
func parseApps(list string, scale int) ([]*application, error) {
	var apps []*application
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		a := appNamed(name, scale)
		if a == nil {
			return nil, fmt.Errorf("-apps: unknown application %q: use %s", name, strings.Join(appNames(), ", "))
		}
		apps = append(apps, a)
	}
	return apps, nil
}
