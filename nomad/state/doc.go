// Package state is the server's in-memory database: a go-memdb schema with
// one file per table (jobs, job versions, submissions, nodes, allocations,
// evaluations, deployments, and the index table of each table's last raft
// index), read methods, write methods and blocking queries.
//
// Vocabulary:
//
//   - index: a raft index. Every write happens at one index, in one memdb
//     transaction, and records that index for every table it touched.
//   - version: a job's specification version; it grows by one when the
//     specification (Stop included) changes. The newest JobTrackedVersions
//     versions, plus the newest stable one, are kept.
//   - incarnation: a job between its creation and its purge, identified by
//     its CreateIndex. Allocations and deployments of an earlier incarnation
//     are hidden from "current" lookups.
//   - deployment health: a deployment group's HealthyAllocs and
//     UnhealthyAllocs are recounted from its allocations in every write
//     that changes them, and a newly healthy allocation pushes the group's
//     RequireProgressBy (deployment_health.go); plans cannot overwrite them.
//
// Reads: the read methods are defined once, on the unexported reader type
// (store.go), and promoted to both *StateStore (latest state)
// and *Snapshot (a consistent point-in-time view). Each takes a
// memdb.WatchSet (or nil) and adds what it read to it; BlockingQuery uses
// that to wait for changes. Lists are sorted (by ID, or newest version
// first); a missing single object is (nil, nil).
//
// Ownership: objects passed to writes and returned by reads belong to the
// store and are shared; nobody mutates them. Writes copy before changing.
// Allocations are stored with Job pointing at the shared job version.
//
// Who may import it: the server (nomad/...) and the FSM (nomad/fsm); not
// the HTTP layer (command/agent), which reads through the server's
// endpoints (cmd/drover/deps_test.go). The scheduler reads only through *Snapshot,
// behind its own narrow interface; only the FSM writes.
package state
