package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
)

// The mix tells whether a replay kept each row's writes in order: its
// sessions update two rows of accounts by key (a bind parameter) in each
// transaction block, each update mixing the row's value with a parameter
// in a way that does not commute (v*3+a, v*5+a, modulo a prime), so that
// the final values depend on the order of every row's writes. With Locks,
// every third transaction instead locks its two rows (SELECT ... FOR
// UPDATE) and sets each to a value computed from what it read (v*7+a): a
// replay sends the logged value, so only the same lock order gives the
// same result. No statement fails: rows are taken in id order, so two
// transactions never deadlock.

// MixDatabase is the database of the mix, MixSchema its schema.
const (
	MixDatabase = "mix"
	MixSchema   = `CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL);
INSERT INTO accounts SELECT g, g FROM generate_series(1, 12) g`
	mixRows = 12
)

// MixOptions is how much of the mix to run.
type MixOptions struct {
	Sessions, Transactions int
	// Locks: every third transaction locks and sets its rows.
	Locks bool
	// Rows is how many of MixSchema's rows the sessions write (at most
	// 12; 0 for 12): fewer rows, more contention.
	Rows int
	// Seed makes the sessions' choices of rows and amounts.
	Seed uint64
	// Simple sends every statement with the simple protocol, its values
	// written in the text, as drivers that interpolate on the client do.
	Simple bool
}

// RunMix runs the mix against the database at dsn (MixSchema made), each
// session on a connection of its own with application_name mix-N.
func RunMix(ctx context.Context, dsn string, o MixOptions) error {
	conns := make([]*pgconn.PgConn, o.Sessions)
	for s := range conns {
		conn, err := pgconn.Connect(ctx, dsn+" application_name=mix-"+strconv.Itoa(s))
		if err != nil {
			for _, c := range conns[:s] {
				c.Close(ctx)
			}
			return err
		}
		conns[s] = conn
	}
	var wg sync.WaitGroup
	errs := make([]error, o.Sessions)
	for s, conn := range conns {
		wg.Go(func() {
			defer conn.Close(ctx)
			if err := mixSession(ctx, conn, rand.New(rand.NewPCG(uint64(s), o.Seed)), o); err != nil {
				errs[s] = fmt.Errorf("mix session %d: %w", s, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func mixSession(ctx context.Context, conn *pgconn.PgConn, rng *rand.Rand, o MixOptions) error {
	// query runs sql with args: bound, or (Simple) written in its text;
	// the values are integers.
	query := func(sql string, args ...string) *pgconn.Result {
		if o.Simple {
			for i := len(args); i > 0; i-- {
				sql = strings.ReplaceAll(sql, "$"+strconv.Itoa(i), args[i-1])
			}
			res, err := conn.Exec(ctx, sql).ReadAll()
			if err != nil {
				return &pgconn.Result{Err: err}
			}
			return res[len(res)-1]
		}
		return conn.ExecParams(ctx, sql, textArgs(args), nil, nil, nil).Read()
	}
	exec := func(sql string, args ...string) error {
		if len(args) == 0 {
			_, err := conn.Exec(ctx, sql).ReadAll()
			return err
		}
		return query(sql, args...).Err
	}
	lockAndSet := func(id int, amount int64) error {
		key := strconv.Itoa(id)
		res := query("SELECT balance FROM accounts WHERE id = $1 FOR UPDATE", key)
		if res.Err != nil {
			return res.Err
		}
		if len(res.Rows) != 1 {
			return fmt.Errorf("row %d: %d rows", id, len(res.Rows))
		}
		v, err := strconv.ParseInt(string(res.Rows[0][0]), 10, 64)
		if err != nil {
			return err
		}
		return exec("UPDATE accounts SET balance = $1 WHERE id = $2", strconv.FormatInt((v*7+amount)%1000003, 10), key)
	}
	rows := mixRows
	if o.Rows > 0 && o.Rows < mixRows {
		rows = o.Rows
	}
	for i := range o.Transactions {
		a, b := rng.IntN(rows)+1, rng.IntN(rows)+1
		if a == b {
			continue
		}
		amount := int64(rng.IntN(4) + 1)
		first, second := "UPDATE accounts SET balance = (balance * 3 + $1) % 1000003 WHERE id = $2", "UPDATE accounts SET balance = (balance * 5 + $1) % 1000003 WHERE id = $2"
		if b < a {
			first, second, a, b = second, first, b, a
		}
		err := exec("BEGIN")
		switch {
		case err != nil:
		case o.Locks && i%3 == 2:
			if err = lockAndSet(a, amount); err == nil {
				err = lockAndSet(b, amount)
			}
		default:
			amt := strconv.FormatInt(amount, 10)
			if err = exec(first, amt, strconv.Itoa(a)); err == nil {
				err = exec(second, amt, strconv.Itoa(b))
			}
		}
		if err == nil {
			err = exec("COMMIT")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func textArgs(args []string) [][]byte {
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	return bs
}

// MixValues returns the mix's rows as one text, id:value in id order.
func MixValues(ctx context.Context, dsn string) (string, error) {
	conn, err := pgconn.Connect(ctx, dsn)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	res := conn.ExecParams(ctx, "SELECT string_agg(id || ':' || balance, ',' ORDER BY id) FROM accounts", nil, nil, nil, nil).Read()
	if res.Err != nil {
		return "", res.Err
	}
	if len(res.Rows) != 1 {
		return "", fmt.Errorf("accounts: %d rows", len(res.Rows))
	}
	return string(res.Rows[0][0]), nil
}
