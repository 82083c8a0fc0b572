// Package scheduler turns an evaluation into a plan for system and sysbatch
// jobs.
//
// A Scheduler reads a consistent snapshot of state (State), decides, and
// submits one plan through a Planner; it never writes state itself. The server's
// workers construct schedulers through a Factory per job type.
//
// The scheduler in this package is the minimal placement engine that proves the
// control-plane pipeline (broker → worker → plan → applier → raft): one
// allocation of each group per ready node in the job's datacenters and node
// pool, destructive replacement of allocations of older job versions, stops
// for stopped jobs, and a deployment record per job version when a group has
// an update block. Feasibility (constraints, drivers, resources) and the full
// node reconciler come with the client/scheduler work.
//
// Imported by the server (nomad/...) only.
package scheduler
