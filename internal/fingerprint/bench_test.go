package fingerprint

import (
	"fmt"
	"testing"
)

const benchText = "SELECT o.id, o.total, c.name FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.created_at > now() - interval '1 day' AND c.region = 'eu-west' ORDER BY o.total DESC LIMIT 50"

func BenchmarkCacheHit(b *testing.B) {
	c := NewCache(0)
	c.Get(benchText)
	b.ReportAllocs()
	for b.Loop() {
		c.Get(benchText)
	}
}

// BenchmarkCacheHitParallel measures a cache shared by all workers, with
// texts spread over the shards as in a real log.
func BenchmarkCacheHitParallel(b *testing.B) {
	c := NewCache(0)
	texts := make([]string, 1024)
	for i := range texts {
		texts[i] = fmt.Sprintf("%s OFFSET %d", benchText, i)
		c.Get(texts[i])
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			c.Get(texts[i%len(texts)])
			i++
		}
	})
}

// BenchmarkMapLookup is the floor a cache hit is compared against.
func BenchmarkMapLookup(b *testing.B) {
	m := map[string][]Item{benchText: Compute(benchText)}
	b.ReportAllocs()
	var n int
	for b.Loop() {
		n += len(m[benchText])
	}
	_ = n
}

func BenchmarkCompute(b *testing.B) {
	b.Run("single", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Compute(benchText)
		}
	})
	b.Run("three statements", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Compute("BEGIN; UPDATE accounts SET balance = balance - 100 WHERE id = 7; COMMIT")
		}
	})
	b.Run("syntax error", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Compute("SELEC * FROM t WHERE id = 1")
		}
	})
}

// BenchmarkCacheShapeHit is a new text of a known shape: the same query
// with other constants, as logs with literal values are full of.
func BenchmarkCacheShapeHit(b *testing.B) {
	c := NewCache(0)
	c.Get(benchText)
	texts := make([]string, 4096)
	for i := range texts {
		texts[i] = fmt.Sprintf("%s OFFSET %d", benchText[:len(benchText)-2], i+100)
	}
	c.Get(texts[0])
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c.Get(texts[i%len(texts)])
		i++
	}
}
