package catalog

import "testing"

// TestStartToleranceBeyond: a table differs from the start only when it is
// apart by more than the share and by more than the rows, either way.
func TestStartToleranceBeyond(t *testing.T) {
	for _, tc := range []struct {
		start, target int64
		want          bool
	}{
		{5000, 2000, true},
		{5000, 5000, false},
		{5000, 4000, false},             // 20%, but only 1,000 rows
		{1_500_000, 1_210_000, true},    // the orders
		{1_500_000, 1_400_000, false},   // 6.7%
		{1_500_000, 1_650_001, true},    // more than 10% more
		{0, 1001, true},                 // an empty table that filled
		{0, 1000, false},                // not beyond 1,000 rows
		{100, 0, false},                 // a small table emptied
		{10_000_000, 11_000_000, false}, // exactly 10%
		{10_000_000, 11_000_001, true},  // just beyond
		{1_000_000_000, 0, true},        // a table truncated
		{20_000, 21_500, false},         // 7.5%
		{20_000, 22_500, true},          // 12.5%, 2,500 rows
		{2_000_000_000, 2_000_999_999, false},
	} {
		if got := DefaultStartTolerance.Beyond(tc.start, tc.target); got != tc.want {
			t.Errorf("Beyond(%d, %d) = %v, want %v", tc.start, tc.target, got, tc.want)
		}
	}
}
