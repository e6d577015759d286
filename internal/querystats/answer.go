package querystats

import (
	"fmt"
	"strconv"
)

// AnswerDiff says how a replayed call's answer compares with the one the
// original server gave, which a capture of the proxy records (a log does
// not): divergence per statement, apart from latency.
type AnswerDiff uint8

const (
	// AnswerSame: the same outcome and, when both succeeded, the same
	// row count.
	AnswerSame AnswerDiff = iota
	// AnswerRows: both succeeded with different row counts.
	AnswerRows
	// AnswerErrorOnlyOnTarget: the original succeeded, the replay failed.
	AnswerErrorOnlyOnTarget
	// AnswerErrorOnlyInOriginal: the original failed, the replay did not.
	AnswerErrorOnlyInOriginal
	// AnswerOtherSQLState: both failed, with different SQLSTATEs.
	AnswerOtherSQLState
	// AnswerValues: both succeeded with the same row count, but the
	// rows' digests differ: other values, or, for a statement that
	// sorts at its top level, another order (package rowdigest).
	AnswerValues

	answerDiffs = iota
)

var answerNames = [...]string{"same", "rows", "error_only_on_target", "error_only_in_original", "other_sqlstate", "values"}

// AnswerCause is what explains an answer differing from the original's,
// when the statement's text tells: not the target's doing.
type AnswerCause string

const (
	// CauseVolatile: the statement calls a function whose result
	// changes from one call to the next (now(), random(), nextval()).
	CauseVolatile AnswerCause = "volatile_function"
	// CauseServerState: the statement reads what a server assigns or
	// keeps for itself (a catalog such as pg_class, an OID, a system
	// column, its backend's pid), which the target assigned otherwise.
	CauseServerState AnswerCause = "server_assigned"
	// CauseSequence: the statement returns a value the target's
	// sequence assigned (INSERT ... RETURNING a column whose default
	// calls nextval, or an identity column), which differs from the
	// original's when that sequence stood elsewhere: rows inserted and
	// rolled back, values cached by other sessions, a copy taken at
	// another point.
	CauseSequence AnswerCause = "sequence_assigned"
	// CauseRaced: in the original the statement ran while another
	// session's transaction that wrote a row it reads or writes ended
	// (committed or rolled back), both naming the row by its primary
	// key, so its answer depended on which came first, an order the
	// replay may not reproduce (syncdep.RaceRow). It explains an error
	// that differs too (a duplicate key).
	CauseRaced AnswerCause = "raced_concurrent_transaction"
	// CauseRacedRelation: the same with a transaction that wrote a
	// relation the statement touches where the rows of one side cannot
	// be bounded (a range or a join, a write without a key:
	// syncdep.RaceRelation). A weaker explanation, counted apart ("raced,
	// relation-wide"): on a busy table it holds for nearly every
	// statement.
	CauseRacedRelation AnswerCause = "raced_concurrent_transaction_relation_wide"
	// CauseAfterDivergence: the statement reads or writes a row, named
	// by key, that an earlier statement of the replay wrote out of the
	// original's order (it raced in the original, its sync wait gave
	// up, a commit it depended on was lost, or its own answer already
	// differed: syncdep.Taint), so the row may hold another value than
	// the original's at that point. The replay's doing, never the
	// target's data ("after an earlier divergence on that row").
	CauseAfterDivergence AnswerCause = "after_divergence"
	// CauseAfterDivergenceRelation: the same where only the relation
	// is known to be shared (the earlier write or this statement names
	// no row by key). Weaker, counted apart as relation-wide races are.
	CauseAfterDivergenceRelation AnswerCause = "after_divergence_relation_wide"
	// CauseSessionState: the statement's session was recorded from the
	// middle (open when the recording started), and its answer may
	// depend on state it built before, which the capture does not hold:
	// a temporary table, a cursor WITH HOLD, a prepared statement, an
	// advisory lock, a sequence's currval, a setting made by a function
	// ("session state from before the recording"). Only for a statement
	// that could depend on such state, never for one that reads
	// ordinary tables only.
	CauseSessionState AnswerCause = "session_state_before_recording"
	// CauseTargetData: no concurrent transaction of the original touched
	// what the statement reads, and nothing else explains it: the
	// target's data differs from the original's at the start ("the
	// target's data differs from the start"). Not an excuse but a
	// finding: counted by table, and it fails the replay.
	CauseTargetData AnswerCause = "target_data_differs"
	// CauseSuspectData: as CauseTargetData, but the rows were read
	// differently once only (not twice, not proven by a digest of the
	// table at the start): a race the capture could not see explains
	// it as well. Counted by table ("suspect: N answers on rows no
	// concurrent transaction touched"); it does not fail the replay.
	CauseSuspectData AnswerCause = "target_data_suspect"
)

// ExplainAnswer counts a differing answer (already recorded) as explained
// by cause; what names it in the statement ("now()", "pg_class"). The
// first explanation is the query's.
func (s *Stats) ExplainAnswer(cause AnswerCause, what string) {
	s.answerExplained++
	if s.answerCause == "" {
		s.answerCause = string(cause) + ": " + what
	}
}

// AnswerExplained is how many differing answers ExplainAnswer explained,
// and the first explanation ("volatile_function: now()").
func (s *Stats) AnswerExplained() (int64, string) { return s.answerExplained, s.answerCause }

// String is the name the JSON uses.
func (d AnswerDiff) String() string {
	if int(d) < len(answerNames) {
		return answerNames[d]
	}
	return "answer(" + strconv.Itoa(int(d)) + ")"
}

// MarshalText is the name the JSON uses (String).
func (d AnswerDiff) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads a name MarshalText wrote.
func (d *AnswerDiff) UnmarshalText(b []byte) error {
	for i, known := range answerNames {
		if known == string(b) {
			*d = AnswerDiff(i)
			return nil
		}
	}
	return fmt.Errorf("unknown answer difference %q", b)
}

// RecordAnswer counts a call compared with the original's answer, and how
// it differed.
func (s *Stats) RecordAnswer(d AnswerDiff) {
	s.Answered++
	if d != AnswerSame && int(d) < answerDiffs {
		s.answerDiffs[d]++
	}
}

// AnswerDiffers is how many compared calls differed, by how.
func (s *Stats) AnswerDiffers() map[AnswerDiff]int64 {
	var m map[AnswerDiff]int64
	for d, n := range s.answerDiffs {
		if n > 0 {
			if m == nil {
				m = map[AnswerDiff]int64{}
			}
			m[AnswerDiff(d)] = n
		}
	}
	return m
}

// answerRow is AnswerDiffers keyed by name, for the JSON; nil when none.
func (s *Stats) answerRow() map[string]int64 {
	var m map[string]int64
	for d, n := range s.AnswerDiffers() {
		if m == nil {
			m = map[string]int64{}
		}
		m[d.String()] = n
	}
	return m
}

// answerFromRow sets the counts from the JSON's names.
func (s *Stats) answerFromRow(m map[string]int64) {
	for name, n := range m {
		for d, known := range answerNames {
			if known == name && d != int(AnswerSame) {
				s.answerDiffs[d] += n
			}
		}
	}
}
