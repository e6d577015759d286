// Package shard splits one replay by session across N processes (shards):
// which shard replays which session of a log.
//
// Two ways decide it. Without a plan, Of hashes the session id: every
// shard that reads the same log computes the same split, with nothing to
// share. A Plan is made by one fast read of the log beforehand (Builder):
// it balances the shards by the statements and busy time of each session,
// keeps sessions that write and read the same relations in one shard where
// the balance allows (so that most synchronized waits stay inside one
// process), and measures the share of sync dependencies that still cross
// shards. A plan is versioned JSON (docs/shard-plan-json.md) that every
// shard reads; its id names it in each shard's result, so that a merge can
// refuse shards of different plans.
//
// The Builder's memory is bounded whatever the log's length: it keeps a
// small record per session up to Options.MaxSessions (later sessions are
// placed by hash, their load counted), the relations by name, and the
// dependencies between sessions up to Options.MaxEdges (beyond, only
// counted).
//
// The package decides; it reads no file and opens no connection (the
// caller feeds it events and writes the plan), and it knows nothing of
// command-line flags.
package shard
