// Package scheduler turns an evaluation into a plan for system and sysbatch
// jobs: one allocation of each task group on every eligible, feasible node.
//
// A Scheduler reads a consistent snapshot of state (State), decides, and
// submits one plan through a Planner; it never writes state itself. The
// server's workers construct schedulers through a Factory per job type.
//
// The pipeline of one evaluation:
//
//	State ──▶ Reconcile (pure)  ──▶ buildPlan ──▶ Planner.SubmitPlan ──▶ Planner.UpdateEval
//	          FeasibleFunc (pure)   resources,        │ partial commit:
//	                                ports, metrics    └─ re-plan on fresh State (≤ 5 times)
//
// Vocabulary:
//   - eligible node: ready, scheduling-eligible, not draining, in the job's
//     datacenters (globs) and node pool ("all" matches any);
//   - feasible node: an eligible node meeting the job, group and task
//     constraints with a healthy driver for every task (feasible.go). Nodes
//     that are not feasible are not targets, and not placement failures;
//   - buckets: Reconcile sorts every (group, node) into named sets: Place,
//     InplaceUpdate, DestructiveUpdate, Stop, Lost, Ignore (reconcile.go
//     states the rules);
//   - placement failure: a placement on a feasible node whose resources or
//     ports are exhausted; reported in eval.FailedTGAllocs and
//     QueuedAllocations. A destructive update that does not fit keeps the
//     old allocation running.
//
// Deployments: a group with an update block (TaskGroup.UsesDeployment) gets
// one deployment per job version, created on its first placement or
// in-place update; a newer version or a stopped job cancels the active one.
// All updates go out at once: max_parallel and canary gating are not
// implemented here yet.
//
// Imported by the server (nomad/...) only. Decision code here takes time as
// a parameter and imports no server, raft or HTTP package.
package scheduler
