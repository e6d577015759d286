package replay

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/event"
)

func TestLogins(t *testing.T) {
	ev := func(kind event.Kind, session, user, db, app string, at time.Duration, q string) *event.Event {
		return &event.Event{Kind: kind, Session: session, User: user, Database: db, Application: app, Time: t0 + at.Microseconds(), Query: q}
	}
	evs := []*event.Event{
		// An original connection that failed: no statement, no check.
		ev(event.Connect, "s0", "nobody", "nowhere", "a", 0, ""),
		ev(event.Statement, "s1", "app", "shop", "web", time.Second, "SELECT 1"),
		// The log creates a role and a database before using them.
		ev(event.Statement, "s1", "app", "shop", "web", 2*time.Second, "create role reporter login"),
		ev(event.Statement, "s1", "app", "shop", "web", 2*time.Second, "CREATE DATABASE reports"),
		ev(event.Statement, "s2", "reporter", "shop", "web", 3*time.Second, "SELECT 1"),
		ev(event.Statement, "s3", "app", "reports", "web", 3*time.Second, "SELECT 1"),
		ev(event.Execute, "s4", "prod", "shop", "web", 4*time.Second, "SELECT $1"),
		ev(event.Statement, "s5", "app", "shop", "batch", 5*time.Second, "SELECT 1"), // filtered out
		ev(event.Statement, "s6", "app", "other", "web", 9*time.Second, "SELECT 1"),  // after End
		ev(event.Disconnect, "s1", "app", "shop", "web", 6*time.Second, ""),
		// s1 again after its disconnection (a reused id): decided anew.
		ev(event.Statement, "s1", "app", "shop2", "web", 7*time.Second, "SELECT 1"),
	}
	r, err := New(Options{Target: "host=/tmp", UserMap: map[string]string{"prod": "app"},
		Filter: Filter{Applications: []string{"web"}, End: t0 + (8 * time.Second).Microseconds()}})
	if err != nil {
		t.Fatal(err)
	}
	got, complete, err := r.Logins(context.Background(), []Source{&sliceSource{evs: evs}}, 0)
	if err != nil || !complete {
		t.Fatalf("complete %v, err %v", complete, err)
	}
	want := []Login{{"app", "shop"}, {"app", "shop2"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("logins %v, want %v", got, want)
	}
	got, complete, _ = r.Logins(context.Background(), []Source{&sliceSource{evs: evs}}, 3)
	if complete || !reflect.DeepEqual(got, want[:1]) {
		t.Errorf("bounded: %v (complete %v), want %v", got, complete, want[:1])
	}
}

func TestRedactDSN(t *testing.T) {
	for in, want := range map[string]string{
		"cannot parse `host=x password=secret port=1`: bad":      "cannot parse `host=x password=xxxxx port=1`: bad",
		"cannot parse `host=x password='se cret' port=1`":        "cannot parse `host=x password=xxxxx port=1`",
		"dial postgres://app:secret@db.example:5432/shop failed": "dial postgres://app:xxxxx@db.example:5432/shop failed",
		"nothing to hide": "nothing to hide",
	} {
		if got := redactDSN(in); got != want {
			t.Errorf("redactDSN(%q) = %q, want %q", in, got, want)
		}
	}
}
