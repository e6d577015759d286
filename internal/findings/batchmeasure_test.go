package findings

import "testing"

// TestBatchMeasureWords: the finding calls batching a cut only when the
// whole interval is one; an interval holding 1 is no change beyond
// noise and one below 1 a rise, never "cut ... by 0.8x".
func TestBatchMeasureWords(t *testing.T) {
	cut, noise, rise := Factor{Ratio: 9, Low: 8.1, High: 10.2}, Factor{Ratio: 1.1, Low: 0.9, High: 1.3}, Factor{Ratio: 0.8, Low: 0.7, High: 0.9}
	const head = "measured on this traffic, replayed 2 times each way: batches of 50 "
	for _, tc := range []struct {
		time Factor
		wal  *Factor
		want string
	}{
		{cut, &Factor{Ratio: 1.3, Low: 1.2, High: 1.4}, head + "cut the target's time per row into events by 9x (8.1–10.2) and the WAL per row by 1.3x (1.2–1.4)"},
		{cut, &noise, head + "cut the target's time per row into events by 9x (8.1–10.2) and did not change the WAL per row beyond noise: ~ 1.1x (0.9–1.3)"},
		{noise, nil, head + "did not change the target's time per row into events beyond noise: ~ 1.1x (0.9–1.3)"},
		{rise, &cut, head + "raised the target's time per row into events: 0.8x (0.7–0.9), below 1, the batched rows cost more and cut the WAL per row by 9x (8.1–10.2)"},
	} {
		m := &BatchMeasure{Max: 50, Rounds: 2, Tables: []string{"events"}, Time: tc.time, WAL: tc.wal}
		if got := m.measured("events"); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
	if got := (&BatchMeasure{Tables: []string{"events"}}).measured("other"); got != "" {
		t.Errorf("another table: %q", got)
	}
}
