// Package stats compares two sets of runs, as benchstat does: each run is
// one sample (a query's mean latency in that run, say), and the test is
// over the runs, never over the calls inside one run. Calls of one run
// share its cache state, its checkpoints and its neighbours; runs differ
// from each other by more than calls within a run do, so a test over
// thousands of calls calls every wobble between two runs significant.
//
// Effect compares a control's runs with a candidate's: the ratio of their
// medians, a distribution-free confidence interval for that ratio (the
// interval that inverts the exact Mann-Whitney rank test over the runs,
// on the logarithm of the values), the control's own run-to-run spread
// as its noise floor, and whether the change is beyond both that floor
// and an effect floor. With too few runs for the interval at the level
// asked, the interval is the ratio widened by a default noise floor that
// the caller measured on identical targets, and says so.
//
// docs/noise.md says why the rank interval was chosen over a bootstrap,
// what three runs per side can and cannot reach, and the false-positive
// rate and power measured by this package's tests.
//
// It is the project's one statistics library (benchstat's benchmath is
// the model): the median and spread of a figure over rounds, the spread
// of rounds (NoiseFloor, RangeFactor, the one d2 table in D2, to 25
// rounds), pooled deviations, rank intervals and tests over runs, the
// order-statistic bounds of a quantile from the calls of one run, and
// the rounds' noise pooled over a rehearsal's queries with the interval
// of a figure against it at the family's level (PooledRoundNoise,
// FamilyInterval).
// internal/compare, internal/judge and internal/stepcurve (and sweep and
// headroom through them) read every such figure here, so that the same
// rounds give every caller the same answer.
//
// The package knows numbers only: no query, no result, no unit, no
// rendering. internal/compare gives it the run-level figures and turns its
// answers into verdicts.
package stats
