package sweep

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// A remote target's CPU is unknown; what the sweep can see of it is the
// same as of a local one. When the CPU is unknown, the reason says which
// step failed.
func TestLocalPostmaster(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	if pid, why := localPostmaster(ctx, c.DSN("postgres")); pid <= 0 {
		t.Errorf("local cluster through its socket: pid %d (%v)", pid, why)
	}
	tcp := "host=127.0.0.1 port=" + strconv.Itoa(c.Port()) + " user=postgres dbname=postgres sslmode=disable"
	if pid, why := localPostmaster(ctx, tcp); pid <= 0 {
		t.Errorf("local cluster through 127.0.0.1: pid %d (%v)", pid, why)
	}
	for _, host := range []string{"db.example.com", "10.1.2.3"} {
		pid, why := localPostmaster(ctx, "host="+host+" port="+strconv.Itoa(c.Port()))
		if pid != 0 || why == nil || !strings.Contains(why.Error(), "not on this machine") {
			t.Errorf("%s: pid %d, why %v; want 0, not on this machine", host, pid, why)
		}
	}
	// A role that may not read data_directory: on this machine, but
	// its postmaster cannot be found, and the reason says so.
	pgclustertest.Exec(t, c, "postgres", "CREATE ROLE plain LOGIN")
	pid, why := localPostmaster(ctx, c.DSN("postgres")+" user=plain")
	if pid != 0 || why == nil || !strings.Contains(why.Error(), "cannot read data_directory") {
		t.Errorf("a role without pg_read_all_settings: pid %d, why %v", pid, why)
	}
}

// functionalCase marks t as a functional case, which measures no time:
// it asserts counts, errors, messages, results or files, with generous
// time bounds or none. Go runs such tests in parallel (at most -parallel
// at once, GOMAXPROCS by default) and only after every sequential test
// of the package has finished: the tests that time real servers (pacing,
// lag, throughput, overhead, comparisons), left sequential, still run
// alone, undisturbed.
func functionalCase(t *testing.T) {
	t.Helper()
	t.Parallel()
}
