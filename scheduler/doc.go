// Package scheduler turns an evaluation into a plan for system and sysbatch
// jobs: one allocation of each task group on every eligible, feasible node;
// and, in the generic scheduler (generic*.go, rank.go, reschedule.go), for
// service and batch jobs: Count allocations of each group on nodes chosen
// by scoring a bounded sample of fitting nodes. ReconcileGeneric states its
// rules; the rest of this comment describes the system scheduler.
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
// Deployments (deployment.go, rollout.go): a group with an update block
// (TaskGroup.UsesDeployment: max_parallel > 0) gets one deployment per job
// version, created on its first placement or in-place update. A newer
// version or a stopped job cancels the active one; a deployment of another
// version never blocks a new one (a failed one included: auto-revert gets
// its own). A stopped job, sysbatch and max_parallel = 0 get none. Each
// evaluation recomputes DesiredTotal from the feasible nodes, so nodes
// going down, draining or turning infeasible never stall a deployment, and
// then gates every deployment group:
//
//	deployment of the version     what the group may do this evaluation
//	──────────────────────────    ─────────────────────────────────────────────
//	running, not canarying        fresh placements and in-place updates: all;
//	                              retries of failed allocations, then
//	                              destructive updates: max_parallel minus the
//	                              allocations of the deployment not healthy
//	running, canaries awaiting    canaries only (replacing the old allocation
//	promotion                     on their node), up to DesiredCanaries;
//	                              joining nodes and in-place updates wait
//	paused (until resumed)        nothing of the version (stops still happen)
//	failed, cancelled             nothing of the version, ever
//	successful                    no gating; new allocations join none
//
// Canary is a percentage of the feasible nodes needing a destructive
// update, rounded up, capped by max_parallel, never on version 0, clamped
// to 100; canary nodes are those retrying a failed canary, then nodes that
// ran canaries before, then node ID order. Promotion (one-way) ends the
// canary phase. An unhealthy allocation that still runs keeps its slot.
// In-place updates are not limited but join the deployment with their
// health reset: they count in flight until healthy. With stagger > 0 a
// wave starts no sooner than stagger after the previous one (the newest
// CreateTime of the deployment's allocations); a held wave yields a
// "rolling-update" evaluation with WaitUntil. The scheduler never marks a
// deployment successful: the deployment watcher does, with
// structs.DeploymentComplete.
//
// Imported by the server (nomad/...) only. Decision code here takes time as
// a parameter and imports no server, raft or HTTP package.
package scheduler
