package connstr

import (
	"errors"
	"testing"
)

// TestWithoutPassword: every form of a password (keyword, quoted with a
// space, spaces around "=", URI user information, URI query, encoded)
// leaves the string, and comes back decoded; the rest still parses to
// the same server, user and database.
func TestWithoutPassword(t *testing.T) {
	tests := []struct {
		in, rest, password string
	}{
		{"host=h port=5433 user=app dbname=db", "host=h port=5433 user=app dbname=db", ""},
		{"host=h password=Secret-1 dbname=db", "host=h dbname=db", "Secret-1"},
		{"host=h password = 'Sec ret\\'2' application_name='my app'", "host=h application_name='my app'", "Sec ret'2"},
		{"postgres://app:Secret-3@h:5433/db", "postgres://app@h:5433/db", "Secret-3"},
		{"postgresql://app:Se%40cret-4@h1:5432,h2:5433/db?sslmode=disable&password=x", "postgresql://app@h1:5432,h2:5433/db?sslmode=disable", "x"},
		{"postgres://app@h/db?password=Se%26cret-5&application_name=a", "postgres://app@h/db?application_name=a", "Se&cret-5"},
		{"postgres://h/db", "postgres://h/db", ""},
	}
	for _, tt := range tests {
		rest, pw, err := WithoutPassword(tt.in)
		if err != nil || rest != tt.rest || pw != tt.password {
			t.Errorf("WithoutPassword(%q) = %q, %q, %v; want %q, %q", tt.in, rest, pw, err, tt.rest, tt.password)
			continue
		}
		a, errA := Parse(tt.in)
		b, errB := Parse(rest)
		if errA != nil || errB != nil || a.Host != b.Host || a.Port != b.Port || a.User != b.User || a.Database != b.Database {
			t.Errorf("%q and %q are not the same server: %v %v", tt.in, rest, errA, errB)
		}
	}
	for _, in := range []string{"host=h sslpassword=k", "postgres://h/db?sslpassword=k"} {
		if _, _, err := WithoutPassword(in); !errors.Is(err, ErrSSLPassword) {
			t.Errorf("WithoutPassword(%q): %v, want ErrSSLPassword", in, err)
		}
	}
}

// FuzzWithoutPassword: whatever the string, what is left holds none of
// the passwords it held.
func FuzzWithoutPassword(f *testing.F) {
	for _, s := range []string{"host=h password=p", "postgres://u:p@h/d?password=q", "password='a b' x=y", "postgresql://u:p%20q@h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rest, _, err := WithoutPassword(s)
		if err != nil {
			return
		}
		if left := Passwords(rest); len(left) > 0 {
			t.Errorf("WithoutPassword(%q) = %q, which still holds %q", s, rest, left)
		}
	})
}
