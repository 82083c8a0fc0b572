// Package scheduler turns an evaluation into a plan. It holds two
// schedulers, each a pure reconciler and a plan builder around one shared
// plan loop:
//
//   - the system scheduler (system*.go) for system and sysbatch jobs: one
//     allocation of each task group on every eligible, feasible node
//     (ReconcileSystem, buildSystemPlan);
//   - the generic scheduler (generic*.go, rank.go, reschedule.go) for
//     service and batch jobs: Count allocations of each group, on nodes
//     chosen by scoring a bounded sample of fitting nodes
//     (ReconcileGeneric, buildGenericPlan).
//
// A Scheduler reads a consistent snapshot of state (State), decides, and
// submits one plan through a Planner; it never writes state itself. The
// server's workers construct schedulers through a Factory per job type
// (scheduler.go).
//
// The pipeline of one evaluation, the same for both (plan_loop.go):
//
//	readJobState ──▶ reconcile (pure) ──▶ build plan ──▶ Planner.SubmitPlan ──▶ Planner.UpdateEval
//	(job_state.go)   ReconcileSystem      resources,       │ partial commit:
//	                 ReconcileGeneric     ports, metrics   └─ re-plan on fresh State (≤ 5 times)
//
// Files: what both share sits in files without a system_ or generic_
// prefix: the plan loop and the evaluation's outcome (plan_loop.go), the
// state read (job_state.go), the stop descriptions (alloc_stop.go), the
// plan-building helpers (plan_common.go), deployment creation and
// retirement (deployment_common.go), the allocations of disconnected nodes
// (disconnect.go: unknown within lost_after, lost past it, which of an
// original and its replacement a reconnection keeps), feasibility (feasible.go,
// version.go), resources and ports (resources.go, arena.go) and metrics
// (metrics.go). The system_* files are the system scheduler, the
// generic_* files the generic one.
//
// Vocabulary:
//   - eligible node: ready, scheduling-eligible, not draining, in the job's
//     datacenters (globs) and node pool ("all" matches any);
//   - feasible node: an eligible node meeting the job, group and task
//     constraints with a healthy driver for every task (feasible.go). Nodes
//     that are not feasible are not targets, and not placement failures;
//   - buckets: the reconcilers sort allocations into named sets. The system
//     one sorts every (group, node) into Place, InplaceUpdate,
//     DestructiveUpdate, Stop, Lost, Ignore (ReconcileSystem states the
//     rules); the generic one sorts every group's allocations into Place
//     (new, replacing, migrating, rescheduling or canary placements),
//     InplaceUpdate, Stop, Lost, Ignore (ReconcileGeneric states the
//     rules);
//   - placement failure: a placement whose resources or ports are
//     exhausted on its node (system) or that finds no fitting node
//     (generic); reported in eval.FailedTGAllocs and QueuedAllocations. A
//     destructive update that does not fit keeps the old allocation
//     running.
//
// The generic scheduler, per group: the allocations holding the group's
// Count slots are kept (current version first), the others stop, free
// name indexes get placements; older versions are updated in place or
// replaced; lost allocations are replaced; allocations on draining nodes
// migrate (at most migrate.max_parallel at once; batch ones run on until
// the drain's deadline); failed ones are rescheduled per the group's
// reschedule policy, avoiding their node, now or through a delayed
// follow-up evaluation. A batch allocation that completed is not run
// again, but a terminal allocation of an older job (an older version, or
// a purged job of the same ID registered again) is ignored, so a changed
// or re-registered batch job runs again. Placements score candidate nodes
// by fitness (binpack or spread), anti-affinity with the group's own
// allocations, affinities and spreads (rank.go); placements that find no
// node leave a blocked evaluation that capacity re-runs. Service groups
// with an update block get one deployment per version
// (generic_deployment.go): canaries (a count) beside the old allocations
// until promotion, then destructive updates in waves of max_parallel
// minus the deployment's allocations not yet healthy; a paused deployment
// holds destructive updates and canaries, a failed or cancelled one holds
// them for good; placements that fill missing slots are never held.
// Batch jobs get no deployment.
//
// Deployments of system jobs (system_deployment.go, system_rollout.go): a
// group with an update block (TaskGroup.UsesDeployment: max_parallel > 0)
// gets one deployment per job version, created on its first placement or
// in-place update. A newer version or a stopped job cancels the active
// one; a deployment of another version never blocks a new one (a failed
// one included: auto-revert gets its own). A stopped job, sysbatch and
// max_parallel = 0 get none. Each evaluation recomputes DesiredTotal from
// the feasible nodes, so nodes going down, draining or turning infeasible
// never stall a deployment, and then gates every deployment group:
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
// Group meta extends the rollout (system_waves.go): drover.max_parallel
// replaces max_parallel by a percentage of the group's feasible nodes (or a
// whole number), and drover.partition holds the last N nodes by node ID
// whose allocation runs another spec (drover.* keys aside) before any
// gating, deployment or not, leaving them out of DesiredTotal.
//
// Imported by the server (nomad/...) only. Decision code here takes time as
// a parameter and imports no server, raft or HTTP package.
package scheduler
