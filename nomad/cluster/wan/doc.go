// Package wan is the membership table of a federation of regions: every
// server of every region that this server knows, with this server's own
// view of whether each one answers.
//
// Each region is its own raft cluster; servers of different regions never
// share a raft configuration. They learn of each other by exchanging their
// tables (the cluster package does the exchanges): a table entry is a
// Member, gossiped with an incarnation number that only the member itself
// raises (it starts at the server's start time, so a restarted server
// supersedes what others remember of it). The rules of the merge:
//
//   - an unknown member is added as alive;
//   - a higher incarnation replaces what is known (a restart: alive again,
//     at its possibly new address);
//   - at the same incarnation a leave (force-leave) wins, and a server that
//     hears it has left while it runs refutes it with a higher incarnation;
//   - a member reaped (failed for ReapAfter) or left leaves a tombstone for
//     TombstoneTTL, so that a peer's older gossip does not bring it back.
//
// Whether a member is alive or failed is not gossiped: each server decides
// it from its own exchanges (FailAfter consecutive failures make a member
// failed, one success makes it alive again). Routes to a region and the
// list of regions hold alive members only, so a region whose servers all
// fail disappears from both.
//
// The package is pure: no network and no clock (callers pass now). A Table
// is safe for concurrent use. Importers: nomad/cluster and the server
// (package nomad, for its member list).
package wan
