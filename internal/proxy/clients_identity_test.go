package proxy

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// tee relays TCP connections to target and keeps, per connection in the
// order they were accepted, the bytes the client received.
type tee struct {
	ln       net.Listener
	target   string
	mu       sync.Mutex
	received []*bytes.Buffer
	wg       sync.WaitGroup
}

func startTee(t *testing.T, target string) *tee {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tp := &tee{ln: ln, target: target}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			buf := &bytes.Buffer{}
			tp.mu.Lock()
			tp.received = append(tp.received, buf)
			tp.mu.Unlock()
			tp.wg.Add(1)
			go func() {
				defer tp.wg.Done()
				defer c.Close()
				s, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer s.Close()
				go func() {
					io.Copy(s, c)
					s.(*net.TCPConn).CloseWrite()
				}()
				io.Copy(io.MultiWriter(c, buf), s)
			}()
		}
	}()
	return tp
}

// streams waits for every relayed connection to end and returns what
// each client received, its BackendKeyData's process id and key zeroed:
// they differ from session to session.
func (tp *tee) streams(t *testing.T) [][]byte {
	t.Helper()
	done := make(chan struct{})
	go func() { tp.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the relayed connections did not end within a minute")
	}
	tp.mu.Lock()
	defer tp.mu.Unlock()
	out := make([][]byte, len(tp.received))
	for i, b := range tp.received {
		s := bytes.Clone(b.Bytes())
		for rest := s; len(rest) >= 5; {
			size := 1 + int(binary.BigEndian.Uint32(rest[1:]))
			if size > len(rest) {
				break
			}
			if rest[0] == 'K' {
				clear(rest[5:size])
			}
			rest = rest[size:]
		}
		out[i] = s
	}
	return out
}

// TestByteIdentityClients: pgbench (its built-in transaction, prepared,
// with a fixed random seed) and a psql session with COPY FROM STDIN
// receive the same bytes from the server directly and through the proxy,
// connection by connection, BackendKeyData's key aside. Each run starts
// from the same state.
func TestByteIdentityClients(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	r := startProxy(t, Config{Upstream: c.DSN("postgres")})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env := []string{"PGSSLMODE=disable", "PGGSSENCMODE=disable"}
	psqlBin, err := pgcluster.FindBinDir("", "psql")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "copy.sql")
	// Expressions, not columns: a column's description carries its
	// table's oid, which a table made again does not keep.
	if err := os.WriteFile(script, []byte("CREATE TABLE copied (id int, name text);\n"+
		"COPY copied FROM STDIN;\n1\tone\n2\t\\N\n3\tthree\n\\.\n"+
		"SELECT id + 0 AS id, name || '' AS name FROM copied ORDER BY id;\nSELECT 1 / 0;\nSELECT count(*) FROM copied;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// pgbench's tables once: made again, they would have other oids,
	// which its SELECT's row description carries.
	if out, err := c.PgbenchEnv(ctx, env, "-i", "-q", "-s", "1", "postgres"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, tc := range []struct {
		name string
		run  func(host, port string) ([]byte, error)
	}{
		{"pgbench", func(host, port string) ([]byte, error) {
			// The same starting state for each run, set up directly.
			if err := c.Exec(ctx, "postgres", "UPDATE pgbench_accounts SET abalance = 0 WHERE abalance <> 0; "+
				"UPDATE pgbench_tellers SET tbalance = 0; UPDATE pgbench_branches SET bbalance = 0; TRUNCATE pgbench_history"); err != nil {
				return nil, err
			}
			return c.PgbenchEnv(ctx, env, "-h", host, "-p", port, "-n", "-M", "prepared", "-c", "1", "-t", "50",
				"--random-seed=7", "postgres")
		}},
		{"psql with COPY", func(host, port string) ([]byte, error) {
			if err := c.Exec(ctx, "postgres", "DROP TABLE IF EXISTS copied"); err != nil {
				return nil, err
			}
			cmd := exec.CommandContext(ctx, filepath.Join(psqlBin, "psql"), "-X", "-h", host, "-p", port,
				"-U", c.User(), "-d", "postgres", "-f", script)
			cmd.Env = append(os.Environ(), env...)
			cmd.Env = append(cmd.Env, "PGAPPNAME=psql")
			return cmd.CombinedOutput()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [2][][]byte
			for i, target := range []string{"127.0.0.1:" + strconv.Itoa(c.Port()), r.addr} {
				tp := startTee(t, target)
				host, port, _ := net.SplitHostPort(tp.ln.Addr().String())
				if out, err := tc.run(host, port); err != nil && tc.name == "pgbench" {
					t.Fatalf("%v\n%s", err, out)
				}
				got[i] = tp.streams(t)
				tp.ln.Close()
			}
			direct, proxied := got[0], got[1]
			if len(direct) == 0 || len(direct) != len(proxied) {
				t.Fatalf("%d connections directly, %d through the proxy", len(direct), len(proxied))
			}
			for i := range direct {
				if !bytes.Equal(direct[i], proxied[i]) {
					t.Errorf("connection %d: %d bytes received directly, %d through the proxy, not the same:\n%s",
						i+1, len(direct[i]), len(proxied[i]), firstDifference(direct[i], proxied[i]))
				}
			}
		})
	}
}

func firstDifference(a, b []byte) string {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	lo, hiA, hiB := max(0, n-40), min(len(a), n+40), min(len(b), n+40)
	return fmt.Sprintf("at byte %d:\ndirect:  %q\nproxied: %q", n, a[lo:hiA], b[lo:hiB])
}
