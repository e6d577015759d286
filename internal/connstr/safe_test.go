package connstr

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// secretForms are connection strings that hold the password "s3cret" or
// "s3 cret" and something else wrong, in every form libpq accepts: the
// forms pgconn's own masking misses among them.
var secretForms = []string{
	"host=localhost password = s3cret port=abc",
	"host=localhost password= s3cret port=abc",
	"host=localhost password =s3cret sslmode=bogus",
	"host=localhost password = 's3 cret' sslmode=bogus",
	`host=localhost password='s3\'cret' port=abc`,
	"host=localhost\tpassword\t=\ts3cret\tport=abc",
	"host=localhost PASSWORD=s3cret port=abc",
	"password = s3cret bogus",
	"sslpassword = s3cret port=abc",
	"postgres://u:s3cret@localhost:abc/db",
	"postgres://u:s3cret@localhost/db?sslmode=bogus",
	"postgresql://u:s3%63ret@localhost:abc/db",
	"postgres://u@localhost/db?password=s3cret&port=abc",
	"postgres://u@localhost/db?pass%77ord=s3cret&sslmode=bogus",
	"postgres://u:s3cret@local host:5432/db",
}

func TestSafeErrorNeverQuotesPassword(t *testing.T) {
	for _, dsn := range secretForms {
		for name, parse := range map[string]func(string) error{
			"pgconn": func(s string) error { _, err := pgconn.ParseConfig(s); return err },
			"pgx":    func(s string) error { _, err := pgx.ParseConfig(s); return err },
		} {
			err := parse(dsn)
			if err == nil {
				t.Errorf("%s %q parsed; the case needs a second error", name, dsn)
				continue
			}
			safe := SafeError(err)
			msg := safe.Error()
			for _, secret := range []string{"s3cret", "s3 cret", "s3'cret", "s3%63ret"} {
				if strings.Contains(msg, secret) {
					t.Errorf("%s %q: message shows the password: %s", name, dsn, msg)
				}
			}
			var pe *ParseError
			if !errors.As(safe, &pe) {
				t.Errorf("%s %q: %T is not a ParseError", name, dsn, safe)
				continue
			}
			if pe.Reason == "" || !strings.Contains(msg, "cannot parse") {
				t.Errorf("%s %q: no reason given: %s", name, dsn, msg)
			}
		}
	}
}

func TestSafeErrorNamesKeywordsAndReason(t *testing.T) {
	_, err := Parse("host=db.example password = s3cret port=abc")
	if err == nil {
		t.Fatal("parsed")
	}
	want := "cannot parse the keyword/value connection string (host, password, port): invalid port"
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %q, want it to start with %q", err.Error(), want)
	}
	_, err = Parse("postgres://u:s3cret@localhost:abc/db?sslmode=require")
	if err == nil || !strings.HasPrefix(err.Error(), "cannot parse the URI connection string (user, password, sslmode)") {
		t.Errorf("URI: %v", err)
	}
}

func TestSafeErrorLeavesOtherErrors(t *testing.T) {
	other := errors.New("connection refused")
	if SafeError(other) != other || SafeError(nil) != nil {
		t.Error("an error that quotes no connection string must be returned as it is")
	}
}

func TestPasswords(t *testing.T) {
	cases := []struct {
		dsn  string
		want []string
	}{
		{"host=x password = s3cret", []string{"s3cret"}},
		{"host=x password='s3 cret' port=1", []string{"s3 cret"}},
		{`password='a\'b'`, []string{"a'b", `a\'b`}},
		{"postgres://u:p%40ss@h/db", []string{"p%40ss", "p@ss"}},
		{"postgres://u@h/db?sslpassword=k", []string{"k"}},
		{"host=x user=y", nil},
	}
	for _, c := range cases {
		got := Passwords(c.dsn)
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("Passwords(%q) = %q, want %q", c.dsn, got, c.want)
		}
	}
}

// FuzzSafeError: whatever the string, the safe message never holds a
// password value the string gave.
func FuzzSafeError(f *testing.F) {
	for _, s := range secretForms {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, dsn string) {
		_, err := pgconn.ParseConfig(dsn)
		if err == nil {
			return
		}
		msg := SafeError(err).Error()
		for _, pw := range Passwords(dsn) {
			if len(pw) >= 4 && strings.Contains(msg, pw) {
				t.Fatalf("%q: message %q shows %q", dsn, msg, pw)
			}
		}
	})
}

// A password written with spaces and no quotes is read by libpq as a
// password and further words: the message names none of them.
func TestSafeErrorUnquotedSpaces(t *testing.T) {
	_, err := Parse("host=x password=my very secret port=1")
	if err == nil {
		t.Fatal("parsed")
	}
	for _, w := range []string{"very", "secret", "my"} {
		if strings.Contains(err.Error(), w) {
			t.Errorf("message shows %q: %s", w, err)
		}
	}
}
