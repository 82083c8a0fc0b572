// Package gc decides what the servers' garbage collector deletes: terminal
// evaluations with their terminal allocations, terminal deployments,
// stopped jobs and down nodes, each after its threshold (Nomad's
// eval_gc_threshold, deployment_gc_threshold, job_gc_threshold,
// node_gc_threshold). Old job versions are pruned by the state store as
// versions are written (state.JobTrackedVersions, keeping the newest
// stable version a revert needs), so they are not this package's concern.
//
// Collect is pure: it takes the objects and now, and returns a
// structs.GCRequest. The leader's loop (nomad/gc_loop.go) runs it on a
// state snapshot periodically and on `PUT /v1/system/gc` (thresholds
// zero), and commits the request through raft; the FSM checks each object
// again when applying it.
//
// Safety rules (what is never collected):
//   - a live allocation (not terminal), nor the evaluation that created it;
//   - an allocation of a deployment that is still active;
//   - an active deployment, nor any deployment of a job's current version
//     (the scheduler reads it: a failed deployment stops its version's
//     rollout);
//   - terminal allocations of the current version of a live batch or
//     sysbatch job (they record that the work is done on their node);
//   - a failed allocation of a live service or batch job that may still be
//     rescheduled (not replaced yet, its group reschedules, and it is
//     unlimited, never rescheduled, or rescheduled last within the policy's
//     interval): it holds the reschedule history its replacement inherits,
//     as in Nomad;
//   - a job that is not stopped, or that still has a live allocation or a
//     non-terminal evaluation;
//   - a node that is not down, or that still has a live allocation.
//
// Importers: package nomad (the leader's loop) and the agent wiring
// (command/agent, for the thresholds). It imports nomad/structs only.
package gc
