package proxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

const (
	scramPassword = "scram-Pa55word-never-recorded"
	md5Password   = "md5-Pa55word-never-recorded"
	plainPassword = "plain-Pa55word-never-recorded"
)

// writeServerFile writes a file into the cluster's data directory, owned
// by the server's user when the tests run as root (the server refuses a
// key file it does not own).
func writeServerFile(t *testing.T, c *pgcluster.Cluster, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(c.DataDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(path, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// tlsCluster starts a cluster with TLS on, a self-signed certificate, and
// two roles that log in over TCP with a password: scram (SCRAM-SHA-256)
// and md5u (md5). postgres stays trusted.
func tlsCluster(t *testing.T) (*pgcluster.Cluster, tls.Certificate) {
	t.Helper()
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	certPEM, keyPEM, cert := selfSigned(t)
	writeServerFile(t, c, "server.crt", certPEM)
	writeServerFile(t, c, "server.key", keyPEM)
	hbaPath := filepath.Join(c.DataDir(), "pg_hba.conf")
	hba, err := os.ReadFile(hbaPath)
	if err != nil {
		t.Fatal(err)
	}
	rules := "host all scram 127.0.0.1/32 scram-sha-256\nhost all md5u 127.0.0.1/32 md5\nhost all plain 127.0.0.1/32 password\n"
	// os.WriteFile keeps the file's owner.
	if err := os.WriteFile(hbaPath, append([]byte(rules), hba...), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		"ALTER SYSTEM SET ssl = on",
		"ALTER SYSTEM SET ssl_cert_file = 'server.crt'",
		"ALTER SYSTEM SET ssl_key_file = 'server.key'",
		"SET password_encryption = 'scram-sha-256'; CREATE ROLE scram LOGIN PASSWORD '" + scramPassword + "'",
		"SET password_encryption = 'md5'; CREATE ROLE md5u LOGIN PASSWORD '" + md5Password + "'",
		"CREATE ROLE plain LOGIN PASSWORD '" + plainPassword + "'",
		"SELECT pg_reload_conf()",
	} {
		if err := c.Exec(ctx, "postgres", sql); err != nil {
			t.Fatalf("%s: %v", strings.Fields(sql)[0], err)
		}
	}
	direct := "host=127.0.0.1 port=" + strconv.Itoa(c.Port()) + " dbname=postgres user=scram sslmode=require"
	poll(t, "the server takes TLS and asks scram for its password", func() bool {
		_, errNoPassword := pgconn.Connect(ctx, direct)
		conn, err := pgconn.Connect(ctx, direct+" password="+scramPassword)
		if err == nil {
			conn.Close(ctx)
		}
		return errNoPassword != nil && err == nil
	})
	return c, cert
}

// TestAuthTLS relays SCRAM-SHA-256, md5, password and trust through the proxy, with
// TLS from the client to the proxy and from the proxy to the server. With
// the server's own certificate, the proxy passes SCRAM channel binding
// through, so pgx's default (channel_binding=prefer) and require both log
// in. With another certificate, channel binding cannot pass: the proxy
// takes SCRAM-SHA-256-PLUS out of the offer and refuses, saying why, a
// client on TLS that supports channel binding (the server would refuse
// it as a downgrade); channel_binding=disable, or no TLS to the proxy,
// logs in. No password is ever recorded or warned about.
func TestAuthTLS(t *testing.T) {
	functionalCase(t)
	c, serverCert := tlsCluster(t)
	ctx := context.Background()
	_, _, otherCert := selfSigned(t)
	upstream := "host=127.0.0.1 port=" + strconv.Itoa(c.Port()) + " sslmode=require"
	direct := pgclustertest.PgConn(ctx, t, c.DSN("postgres"))
	defer direct.Close(ctx)

	type attempt struct {
		user, password, extra string
		refused               string // what the error says; empty: logs in
	}
	for _, tc := range []struct {
		name     string
		cert     tls.Certificate
		attempts []attempt
	}{
		{"server's certificate", serverCert, []attempt{
			{"scram", scramPassword, "sslmode=require", ""},
			{"scram", scramPassword, "sslmode=require channel_binding=require", ""},
			{"scram", scramPassword, "sslmode=disable", ""},
			{"md5u", md5Password, "sslmode=require", ""},
			{"plain", plainPassword, "sslmode=require", ""},
			{"postgres", "", "sslmode=require", ""},
			{"scram", "wrong-" + scramPassword, "sslmode=require", "password authentication failed"},
			{"plain", "wrong-" + plainPassword, "sslmode=disable", "password authentication failed"},
		}},
		{"another certificate", otherCert, []attempt{
			{"scram", scramPassword, "sslmode=require", "connect with channel_binding=disable (libpq"},
			{"scram", scramPassword, "sslmode=require application_name='PostgreSQL JDBC Driver'", "connect with channelBinding=disable in the JDBC URL"},
			{"scram", scramPassword, "sslmode=require channel_binding=disable", ""},
			{"scram", scramPassword, "sslmode=require channel_binding=require", "channel binding"},
			{"scram", scramPassword, "sslmode=disable", ""},
			{"md5u", md5Password, "sslmode=require", ""},
			{"postgres", "", "sslmode=require", ""},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startProxy(t, Config{Upstream: upstream, TLS: &tls.Config{Certificates: []tls.Certificate{tc.cert}}})
			wantTLS, wantFailed := 0, 0
			for _, a := range tc.attempts {
				dsn := r.dsn(a.user, "postgres", a.extra)
				if a.password != "" {
					dsn += " password=" + a.password
				}
				clientTLS := strings.Contains(a.extra, "sslmode=require")
				if clientTLS {
					wantTLS++
				}
				conn, err := pgconn.Connect(ctx, dsn)
				if a.refused != "" {
					if err == nil || !strings.Contains(err.Error(), a.refused) {
						t.Errorf("%s, %s: %v, want an error saying %q", a.user, a.extra, err, a.refused)
					}
					if err == nil {
						conn.Close(ctx)
					}
					// pgx refuses channel_binding=require itself once
					// the offer lacks SCRAM-SHA-256-PLUS; the proxy
					// refuses the others: a session either way.
					wantFailed++
					continue
				}
				if err != nil {
					t.Errorf("%s, %s: %v", a.user, a.extra, err)
					continue
				}
				if clientTLS != isTLS(conn) {
					t.Errorf("%s, %s: the client leg's TLS is %v", a.user, a.extra, isTLS(conn))
				}
				res, err := conn.Exec(ctx, "SELECT current_user").ReadAll()
				if err != nil || string(res[0].Rows[0][0]) != a.user {
					t.Errorf("%s, %s: current_user: %v", a.user, a.extra, err)
				}
				ssl, err := direct.Exec(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = "+strconv.Itoa(int(conn.PID()))).ReadAll()
				if err != nil || string(ssl[0].Rows[0][0]) != "t" {
					t.Errorf("%s, %s: the upstream leg is not TLS (%v)", a.user, a.extra, err)
				}
				conn.Close(ctx)
			}

			m := r.sink.waitEnds(t, len(tc.attempts))
			ends := checkSessions(t, m)
			tlsStartups, authFailed := 0, 0
			for id, recs := range m {
				if recs[0].TLS {
					tlsStartups++
				}
				if ends[id] == capture.EndAuthFailed {
					authFailed++
					continue
				}
				// Over TLS as in clear: the session's query, then
				// its answer, as the replay will read them.
				var query, complete bool
				for _, rec := range recs {
					switch {
					case rec.Kind == capture.KindFrontend && rec.Msg[0] == 'Q' && bytes.Contains(rec.Msg, []byte("SELECT current_user")):
						query = true
					case rec.Kind == capture.KindComplete && query && rec.Tag == "SELECT 1":
						complete = true
					}
				}
				if !query || !complete {
					t.Errorf("session %d (TLS %v): query recorded %v, its answer %v", id, recs[0].TLS, query, complete)
				}
			}
			if tlsStartups != wantTLS || authFailed != wantFailed {
				t.Errorf("%d startups on TLS and %d sessions failing authentication, want %d and %d",
					tlsStartups, authFailed, wantTLS, wantFailed)
			}
			for _, rec := range r.sink.records() {
				for _, pw := range []string{scramPassword, md5Password, plainPassword} {
					if recordHolds(rec, pw) {
						t.Errorf("a %v record holds a password", rec.Kind)
					}
				}
			}
			for _, w := range r.warns() {
				if strings.Contains(w, scramPassword) || strings.Contains(w, md5Password) || strings.Contains(w, plainPassword) {
					t.Errorf("a warning holds a password: %s", w)
				}
			}
		})
	}
}

func isTLS(conn *pgconn.PgConn) bool {
	_, ok := conn.Conn().(*tls.Conn)
	return ok
}

// recordHolds says whether any of a record's bytes hold s.
func recordHolds(r capture.Record, s string) bool {
	if bytes.Contains(r.Msg, []byte(s)) {
		return true
	}
	fields := []string{r.Tag, r.SQLState, r.Severity, r.Message, r.ClientAddr}
	for _, p := range r.Params {
		fields = append(fields, p.Name, p.Value)
	}
	for _, f := range fields {
		if strings.Contains(f, s) {
			return true
		}
	}
	return false
}

// TestWithoutPlus: the server's SASL offer loses SCRAM-SHA-256-PLUS and
// nothing else, byte for byte as the server would have written the
// rest; an offer without it goes through as it came, and one of it
// alone is refused. A client's first SCRAM message asks for channel
// binding by its GS2 header's first byte.
func TestWithoutPlus(t *testing.T) {
	// sasl is an AuthenticationSASL as the server writes it.
	sasl := func(mechs ...string) []byte {
		body := []byte{0, 0, 0, 10}
		for _, m := range mechs {
			body = append(append(body, m...), 0)
		}
		body = append(body, 0)
		return append([]byte{'R', 0, 0, 0, byte(len(body) + 4)}, body...)
	}
	for _, c := range []struct {
		offer []string
		want  []byte
		err   error
	}{
		{[]string{"SCRAM-SHA-256-PLUS", "SCRAM-SHA-256"}, sasl("SCRAM-SHA-256"), nil},
		{[]string{"SCRAM-SHA-256", "SCRAM-SHA-256-PLUS", "OTHER"}, sasl("SCRAM-SHA-256", "OTHER"), nil},
		{[]string{"SCRAM-SHA-256"}, nil, nil},
		{[]string{"SCRAM-SHA-256-PLUS"}, nil, errChannelBindingOnly},
	} {
		got, err := withoutPlus(sasl(c.offer...))
		if !bytes.Equal(got, c.want) || err != c.err {
			t.Errorf("offer %q: %q, %v; want %q, %v", c.offer, got, err, c.want, c.err)
		}
	}
	cut := append([]byte{'R', 0, 0, 0, 26, 0, 0, 0, 10}, "SCRAM-SHA-256-PLUS"...)
	if got, err := withoutPlus(cut); got != nil || err != nil {
		t.Errorf("an offer cut short: %q, %v; want it through as it came", got, err)
	}
	// first is a SASLInitialResponse whose data starts with gs2.
	first := func(gs2 string) []byte {
		body := append([]byte("SCRAM-SHA-256\x00"), 0, 0, 0, byte(len(gs2)))
		body = append(body, gs2...)
		return append([]byte{'p', 0, 0, 0, byte(len(body) + 4)}, body...)
	}
	for gs2, want := range map[string]bool{"n,,n=,r=abc": false, "y,,n=,r=abc": true, "p=tls-server-end-point,,n=,r=abc": true, "": false} {
		if got := wantsBinding(first(gs2)); got != want {
			t.Errorf("GS2 header %q: wants binding %v, want %v", gs2, got, want)
		}
	}
}
