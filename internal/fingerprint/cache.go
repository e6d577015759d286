package fingerprint

import (
	"hash/maphash"
	"strings"
	"sync"
	"unsafe"
)

// DefaultMaxBytes is the memory a Cache aims to stay under when no limit
// is given: some 300,000 typical texts. Texts that repeat (no literals, or
// few values) are few and stay; the ones with literal values are mostly
// seen once, and caching more of them buys little.
const DefaultMaxBytes = 64 << 20

// numShards spreads the lock: workers looking up different texts rarely
// meet on the same shard.
const numShards = 64

// Cache maps exact query text to its Items, running the parser only on
// texts it has not seen recently, nor any of the same shape (the same text
// but for constants, see shape.go). It is safe for concurrent use.
//
// Memory is bounded: each shard keeps two generations of entries, a
// current one that new entries go into and the previous one. When the
// current generation reaches half the shard's budget, the previous one is
// dropped and the current one takes its place. A hit in the previous
// generation moves the entry back into the current one, so texts in use
// survive and texts not seen for a generation are forgotten: an LRU
// approximation without the list, so a hit writes nothing. Logs with
// literal values have millions of distinct texts, most seen once.
//
// The Items returned are shared between callers and must not be modified.
type Cache struct {
	seed       maphash.Seed
	shardBytes int64 // budget of one generation of one shard
	compute    func(string) []Item
	shards     [numShards]shard
}

type shard struct {
	mu       sync.Mutex
	cur, old map[string][]Item
	curBytes int64
	stats    Stats
	// Keep shards on separate cache lines so their locks do not
	// contend through false sharing.
	_ [64]byte
}

// Stats counts cache activity.
type Stats struct {
	Hits      int64 // lookups of a text seen before
	ShapeHits int64 // lookups of a new text of a known shape (see shape.go)
	Misses    int64 // lookups that ran the parser
	Rotations int64 // generations dropped to stay within the budget
	Entries   int64 // texts currently held
}

// NewCache returns a Cache using about maxBytes of memory at most;
// maxBytes <= 0 means DefaultMaxBytes.
func NewCache(maxBytes int64) *Cache {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	c := &Cache{
		seed:       maphash.MakeSeed(),
		shardBytes: max(maxBytes/numShards/2, 1),
		compute:    Compute,
	}
	for i := range c.shards {
		c.shards[i].cur = make(map[string][]Item)
		c.shards[i].old = make(map[string][]Item)
	}
	return c
}

// Get returns the statements of text; see Compute.
func (c *Cache) Get(text string) []Item {
	if items, ok := c.exact(text); ok {
		return items
	}
	var arr [512]byte
	sh, ok := shape(text, arr[:0])
	if !ok {
		sh = nil
	}
	return c.miss(text, sh, false)
}

// exact looks text up as it is.
func (c *Cache) exact(text string) ([]Item, bool) {
	if strings.IndexByte(text, shapeMark) >= 0 {
		// No SQL holds a NUL byte, but a corrupt log may: such a text
		// could spell a shape, and is never kept.
		return nil, false
	}
	s := c.shard(text)
	s.mu.Lock()
	defer s.mu.Unlock()
	if items, ok := s.cur[text]; ok {
		s.stats.Hits++
		return items, true
	}
	if items, ok := s.old[text]; ok {
		s.stats.Hits++
		delete(s.old, text)
		c.insert(s, text, items)
		return items, true
	}
	return nil, false
}

// miss finds the Items of a text that is not in the Cache as it is: by
// its shape sh (nil when it has none), or else from the parser. With
// exactNext the caller has not looked the text itself up, and miss does,
// after the shape.
func (c *Cache) miss(text string, sh []byte, exactNext bool) []Item {
	// A text of a known shape has the Items of that shape. Shapes hold a
	// NUL byte and the texts kept in the maps never do (see exact), so
	// both share them.
	var ss *shard
	if sh != nil {
		ss = &c.shards[maphash.Bytes(c.seed, sh)%numShards]
		ss.mu.Lock()
		items, hit := ss.cur[string(sh)]
		if !hit {
			if items, hit = ss.old[string(sh)]; hit {
				delete(ss.old, string(sh))
				c.insert(ss, string(sh), items)
			}
		}
		if hit {
			ss.stats.ShapeHits++
			ss.mu.Unlock()
			return items
		}
		ss.mu.Unlock()
	}
	if exactNext {
		if items, ok := c.exact(text); ok {
			return items
		}
	}

	s := c.shard(text)
	s.mu.Lock()
	s.stats.Misses++
	s.mu.Unlock()
	// Parse without the lock: two goroutines may parse the same text at
	// once, which costs time but gives the same answer. The first to
	// keep its Items wins, and the other returns those, so that every
	// caller shares one set of Items, and each statement's Class (made
	// on first use, see Item.Class) is made once.
	items := c.compute(text)
	if ss != nil {
		ss.mu.Lock()
		if kept, ok := ss.cur[string(sh)]; ok {
			items = kept
		} else {
			c.insert(ss, string(sh), items)
		}
		ss.mu.Unlock()
	}
	if strings.IndexByte(text, shapeMark) < 0 {
		s.mu.Lock()
		if kept, ok := s.cur[text]; ok && ss == nil {
			items = kept
		} else if !ok {
			// The text may be a slice of a large reader buffer; a
			// copy keeps the cache from pinning it.
			c.insert(s, strings.Clone(text), items)
		}
		s.mu.Unlock()
	}
	return items
}

func (c *Cache) shard(key string) *shard {
	return &c.shards[maphash.String(c.seed, key)%numShards]
}

func (c *Cache) insert(s *shard, text string, items []Item) {
	if s.curBytes >= c.shardBytes {
		s.old = s.cur
		s.cur = make(map[string][]Item, len(s.old))
		s.curBytes = 0
		s.stats.Rotations++
	}
	s.cur[text] = items
	s.curBytes += entrySize(text, items)
}

// entrySize estimates the memory of one entry: the key, the items and the
// map's own per-entry overhead.
func entrySize(text string, items []Item) int64 {
	n := int64(len(text)) + 64
	for _, it := range items {
		n += int64(len(it.Fingerprint)+len(it.Query)) + 56 + int64(unsafe.Sizeof(classSlot{}))
	}
	return n
}

// Stats returns the cache's counters so far.
func (c *Cache) Stats() Stats {
	var t Stats
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		t.Hits += s.stats.Hits
		t.ShapeHits += s.stats.ShapeHits
		t.Misses += s.stats.Misses
		t.Rotations += s.stats.Rotations
		t.Entries += int64(len(s.cur) + len(s.old))
		s.mu.Unlock()
	}
	return t
}
