package source

import (
	"fmt"
	"strings"
	"time"
)

// timeLayouts are the forms ParseTime reads.
var timeLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02"}

// ParseTime reads a bound of a time window (Selection.Start, End): RFC
// 3339 or "2006-01-02 15:04:05" (fractions allowed), in loc when it has
// no zone. It returns µs since the epoch.
func ParseTime(s string, loc *time.Location) (int64, error) {
	s = strings.TrimSpace(s)
	for _, l := range timeLayouts {
		if t, err := time.ParseInLocation(l, s, loc); err == nil {
			return t.UnixMicro(), nil
		}
	}
	return 0, fmt.Errorf("cannot read time %q: use RFC 3339 (2006-01-02T15:04:05Z) or \"2006-01-02 15:04:05\"", s)
}
