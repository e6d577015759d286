package shard

import (
	"fmt"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/event"
)

// BenchmarkBuilder is the plan's cost per event on top of reading the
// log: 400 sessions over 40 tables, transactions of a read and a write.
func BenchmarkBuilder(b *testing.B) {
	var evs []*event.Event
	for i := range 20000 {
		s := fmt.Sprintf("65f0a1b2.%x", i%400)
		tbl := fmt.Sprintf("t%d", i%40)
		for _, q := range []string{"BEGIN", "SELECT * FROM " + tbl + " WHERE id = 1", "UPDATE " + tbl + " SET n = n + 1 WHERE id = 2", "COMMIT"} {
			evs = append(evs, &event.Event{Kind: event.Statement, Session: s, Database: "db", Query: q, Duration: 100, Time: int64(i)})
		}
	}
	bl, err := NewBuilder(Options{Shards: 4})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bl.Add(evs[i%len(evs)])
	}
	b.StopTimer()
	if _, err := bl.Plan(Input{}); err != nil {
		b.Fatal(err)
	}
}
