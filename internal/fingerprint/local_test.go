package fingerprint

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestLocalAgreesWithCompute(t *testing.T) {
	c, parses := countingCache(0)
	resolved := 0
	l := NewLocal(c, func(items []Item) string {
		resolved++
		return itemsText(items)
	})
	r := rand.New(rand.NewPCG(1, 2))
	texts := func(i int) string {
		switch i % 6 {
		case 0:
			return fmt.Sprintf("SELECT * FROM t WHERE id = %d", r.IntN(100))
		case 1:
			return fmt.Sprintf("SELECT * FROM t%d WHERE id = $1", r.IntN(6000)) // more than a Local holds
		case 2:
			return fmt.Sprintf("SET application_name = 'a%d'", r.IntN(50))
		case 3:
			return "BEGIN; SELECT 1; COMMIT"
		case 4:
			return fmt.Sprintf("SELEC %d", r.IntN(10)) // unparsed, one shape
		default:
			// A text that spells the shape of case 0 (NUL bytes are no
			// SQL, but a corrupt log may hold anything): it must not be
			// taken for that shape.
			return "SELECT * FROM t WHERE id = \x00"
		}
	}
	for i := range 50000 {
		text := texts(i)
		if got, want := l.Get(text), itemsText(Compute(text)); got != want {
			t.Fatalf("Get(%q) = %s, want %s", text, got, want)
		}
	}
	// The parser runs once per shape or text the Cache had not seen;
	// the Local resolves once per entry it fills.
	if n := parses.Load(); n > 6000+50+1+1+1+1 {
		t.Errorf("parser ran %d times", n)
	}
	if resolved > 20000 {
		t.Errorf("resolved %d times in 50000 lookups", resolved)
	}
}

func BenchmarkLocal(b *testing.B) {
	c := NewCache(0)
	l := NewLocal(c, func(items []Item) []Item { return items })
	texts := make([]string, 4096)
	for i := range texts {
		texts[i] = fmt.Sprintf("%s OFFSET %d", benchText[:len(benchText)-2], i+100)
	}
	b.Run("hit", func(b *testing.B) {
		l.Get(benchText)
		for b.Loop() {
			l.Get(benchText)
		}
	})
	b.Run("shape hit", func(b *testing.B) {
		i := 0
		for b.Loop() {
			l.Get(texts[i%len(texts)])
			i++
		}
	})
}

// itemsText prints Items without the place their Class is kept in, which
// differs between two computations of one text.
func itemsText(items []Item) string {
	var b strings.Builder
	for _, it := range items {
		fmt.Fprintf(&b, "{%s %q %v} ", it.Fingerprint, it.Query, it.Unparsed)
	}
	return b.String()
}
