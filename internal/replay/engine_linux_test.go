package replay

import (
	"context"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/logread"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

// TestEngineDetaches: every connection a session opens on the engine is
// taken off Go's netpoller
// before its first statement (engineConn.detach). Left on it, each answer
// and each read the server makes of a statement also wakes an idle
// runtime thread in the netpoller's epoll; the replay's results are the
// same, only its CPU shows it, so this counts.
func TestEngineDetaches(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{})
	var l testLog
	const sessions = 3
	for range sessions {
		s := l.session("postgres", "postgres", 0)
		for i := range 50 {
			s.query(time.Duration(i)*time.Millisecond, time.Microsecond, "SELECT 1")
		}
		s.disconnect(time.Second)
	}
	path := l.write(t)
	rd, err := logread.Open(path, logread.Options{Prefix: testPrefix})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	r, err := New(Options{Target: c.DSN("postgres"), Speed: 0, Sessions: SessionsEngine})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := r.Run(ctx, ctx, selected(source.Selection{}, rd))
	if err != nil {
		t.Fatal(err)
	}
	if r.engine == nil {
		t.Fatal("the replay did not run on the engine")
	}
	if res.Statements.Executed != sessions*50 || res.Statements.Failed != 0 {
		t.Fatalf("executed %d statements, %d failed, want %d and 0", res.Statements.Executed, res.Statements.Failed, sessions*50)
	}
	if got := r.engine.detached.Load(); got != sessions {
		t.Errorf("%d of the %d connections were taken off Go's netpoller", got, sessions)
	}
}
