// Package source is the event-source layer: it turns the logs a command
// is given into the sources of events that analyze and replay consume,
// and accounts for everything it read and left out.
//
// Open is the one opener. It opens each file once (its format and prefix
// detected then, its first events peeked to tell a copy of another log),
// skips a log that is empty or repeats another, refuses logs that do not
// look like one workload (times that neither overlap nor follow, different
// servers, as the readers' TimeRange and Origin and logread.ProbeLog show
// them) unless told otherwise, and notes each file's size and content
// hash (results.Input, the hash a shard plan names its logs by), so that
// the parts of one input are known as such when they are merged.
//
// Select composes the selections in one place, in one order: the shard
// (Shard: shard.Of, the stable hash of the session id, or a plan's
// Assign), the time window,
// pgrehearse's own sessions, the database, user and application filters.
// Each is a decorator of an event.Source that counts what it leaves out;
// the counts, and the readers' line accounting, flow with the events: the
// sources are results.SourceCounter, which analyze and replay ask once
// they are read. Progress is a callback (Options.Progress).
//
// Fold is an Origin made of another: its K consecutive time slices
// overlaid on the first's window (a headroom step's k times the load),
// one source merged by time, each slice's sessions its own and in a lane
// of its own (event.Event.Lane), every event read counted once.
//
// Measured says why a run measured nothing, as a typed Reason with the
// facts behind it (Nothing): the reason that actually dropped the lines
// or statements, and the remedy for it in the server's terms.
//
// The package reads logs through package logread and knows nothing of
// what consumes the events. It names no command-line flag: a command
// renders its Reasons with its own words. It writes nothing.
package source
