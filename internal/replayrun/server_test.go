package replayrun

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestSameServer: one server is the same port, postmaster start and, where
// readable, system identifier and data directory; clones restored from
// one base backup share the identifier and are two servers.
func TestSameServer(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 8, 0, 0, 123456000, time.UTC)
	one := &Server{SystemID: "7300000000000000001", Port: 5432, Started: t0, DataDir: "/var/lib/postgresql/data"}
	tests := []struct {
		name string
		b    *Server
		same bool
	}{
		{"itself", one, true},
		{"another spelling, the start in another zone", &Server{SystemID: one.SystemID, Port: 5432, Started: t0.In(time.FixedZone("CET", 3600)), DataDir: one.DataDir}, true},
		{"identifier and directory unreadable", &Server{Port: 5432, Started: t0}, true},
		{"a clone of the same base backup, another port", &Server{SystemID: one.SystemID, Port: 5433, Started: t0.Add(time.Minute), DataDir: one.DataDir}, false},
		{"a clone on another host, same port", &Server{SystemID: one.SystemID, Port: 5432, Started: t0.Add(time.Second), DataDir: one.DataDir}, false},
		{"another cluster, same port and start", &Server{SystemID: "7300000000000000002", Port: 5432, Started: t0}, false},
		{"another directory", &Server{SystemID: one.SystemID, Port: 5432, Started: t0, DataDir: "/srv/pg"}, false},
		{"not answered", nil, false},
	}
	for _, tt := range tests {
		if got := SameServer(one, tt.b); got != tt.same {
			t.Errorf("%s: SameServer = %v, want %v", tt.name, got, tt.same)
		}
	}
	s := &Server{MaxConnections: 100, SuperuserReserved: 3, Reserved: 2, InUse: 10}
	if got := s.FreeSlots(); got != 85 {
		t.Errorf("FreeSlots = %d, want 85", got)
	}
	if got := (&Server{MaxConnections: 5, SuperuserReserved: 3, InUse: 4}).FreeSlots(); got != 0 {
		t.Errorf("FreeSlots of a full server = %d, want 0", got)
	}
}

// checkAskServer: the server b answers alike through its socket as the
// superuser and over TCP as a role without privileges (which may not
// read the system identifier nor the data directory), so the two are
// one server; the slots are the settings' less those in use.
func checkAskServer(t *testing.T, b *pgcluster.Cluster) {
	t.Helper()
	ctx := context.Background()
	pgclustertest.Exec(t, b, "postgres", "CREATE ROLE plain LOGIN")
	super, err := AskServer(ctx, b.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := AskServer(ctx, fmt.Sprintf("host=127.0.0.1 port=%d user=plain dbname=postgres sslmode=disable", b.Port()))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("superuser: %+v; plain: %+v", super, plain)
	if super.SystemID == "" || super.DataDir == "" || super.Port != b.Port() || super.Started.IsZero() {
		t.Errorf("the superuser was told %+v", super)
	}
	if !SameServer(super, plain) {
		t.Errorf("one server is two: %+v, %+v", super, plain)
	}
	if super.MaxConnections < 10 || super.SuperuserReserved != 3 || super.FreeSlots() != super.MaxConnections-3-super.Reserved-super.InUse {
		t.Errorf("slots %+v", super)
	}
}
