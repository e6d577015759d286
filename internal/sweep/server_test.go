package sweep

import (
	"context"
	"strconv"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// A remote target's CPU is unknown; what the sweep can see of it is the
// same as of a local one.
func TestLocalPostmaster(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	if pid := localPostmaster(ctx, c.DSN("postgres")); pid <= 0 {
		t.Errorf("local cluster through its socket: pid %d", pid)
	}
	tcp := "host=127.0.0.1 port=" + strconv.Itoa(c.Port()) + " user=postgres dbname=postgres sslmode=disable"
	if pid := localPostmaster(ctx, tcp); pid <= 0 {
		t.Errorf("local cluster through 127.0.0.1: pid %d", pid)
	}
	for _, host := range []string{"db.example.com", "10.1.2.3"} {
		if pid := localPostmaster(ctx, "host="+host+" port="+strconv.Itoa(c.Port())); pid != 0 {
			t.Errorf("%s taken for this machine: pid %d", host, pid)
		}
	}
}
