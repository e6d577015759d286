// Package coord coordinates the shards of one replay through a PostgreSQL
// database of their own (the coordination database, never the target, so
// that the measurement is not disturbed): a rendezvous barrier that fixes
// one start for every shard, each shard's clock offset against that
// server, and the commits that synchronized sessions of one shard wait
// for in another.
//
// # Start
//
// Each shard Joins a run (a name every shard of one replay shares) and
// waits at the Barrier. The first shard to see all N registered fixes
// the start a few seconds ahead on the coordination server's clock; each
// shard turns it into its own clock with the offset it measured (the
// sample of least round trip among several, corrected by half of it), so
// that shards on machines whose clocks differ still start together, to
// within half a round trip. Shards that disagree on what they replay
// (the Agree string: plan, logs, speed, synchronization) are refused at
// Join, before anything runs.
//
// # Commits across shards
//
// Every shard reads the whole log, so it knows every commit of the log
// and its position (the ordinal of its event in the log, the same in
// every shard). A shard tells the others which of its own commits have
// run on the target with a watermark and a list: "every commit of mine
// before position L has run, and so have these after it". It publishes
// them with NOTIFY as they happen, and keeps L in its row of the
// coordination database, which the others also poll: a shard whose
// notifications were lost still learns L. A commit that another shard
// replays is registered with Foreign and released (its Done called) once
// its shard says it ran. Traffic is one message per batch of commits;
// memory is the commits in flight between the shards' readers and their
// sessions, bounded by MaxPending.
//
// A shard that is gone (its coordination session ended, or its heartbeat
// stopped, or it said it failed) is lost: the commits of it that others
// wait for are released at once, and their waits are counted under their
// own reason (ReasonShardLost), apart from timeouts.
//
// A Follower feeds the events of other shards' sessions, as the replay's
// reader meets them, to the replay's syncdep.Tracker, so that their
// commits take their place in the log's commit order and the waits of
// this shard's statements name them, and registers those commits with the
// Member. The replay then needs three calls: Follower.Event for another
// shard's event, Advance for its own, Ran when its own commit has run; and
// a wait whose commit was released asks its owner, a *Peer, whether it
// gave up (SyncGiveUp).
//
// The package does not replay, does not retry a lost shard (replaying its
// writes twice would corrupt the target) and knows no command-line flag.
package coord
