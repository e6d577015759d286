package results

// ThinkTime is what a workload's explicit transaction blocks were made
// of: how many ended (Blocks), their time from the start of the
// statement that opened each to the end of the one that ended it
// (BlockSeconds), and the part of it between their statements
// (GapSeconds): the application's own time inside its transactions,
// their locks held. A replay faster than the log's pace shortens that
// gap as much as every other, which the application would not.
type ThinkTime struct {
	Blocks       int64   `json:"blocks"`
	BlockSeconds float64 `json:"block_seconds"`
	GapSeconds   float64 `json:"gap_seconds"`
}

// Share is the gaps' part of the blocks' time (0 without blocks).
func (t ThinkTime) Share() float64 {
	if t.BlockSeconds <= 0 {
		return 0
	}
	return t.GapSeconds / t.BlockSeconds
}

// GapMS is the mean gap time of a block, in milliseconds.
func (t ThinkTime) GapMS() float64 {
	if t.Blocks == 0 {
		return 0
	}
	return t.GapSeconds / float64(t.Blocks) * 1000
}
