// Package restarts decides what happens to a task after it exits: restart it
// (after a delay), fail it, or call it done. It is pure: Decide and Evaluate
// take the policy, the history of earlier restarts and now as plain data and
// return a decision; the task runner owns the timer.
//
// Vocabulary:
//
//	policy   the task's restart block (attempts, interval, delay, mode)
//	history  the times of the task's earlier restarts (when each one began)
//	window   the restarts of the history within the last interval
//
// Rules, in order:
//
//  1. A batch or sysbatch task that exited successfully is done. A system
//     or service task is long-running: any exit, even code 0, is a failure
//     to restart (as in Nomad). With a lifecycle block (EvaluateTask,
//     NewTaskTracker), an ephemeral task (prestart or poststart without
//     sidecar, and poststop) is done after a successful exit in every job
//     type, and a sidecar is restarted even in a batch job.
//  2. An error marked unrecoverable (a drivers.RecoverableError with
//     Recoverable false, such as a bad image name at start) fails the task.
//  3. Fewer than attempts restarts in the window: restart after delay.
//  4. Otherwise mode "fail" fails the task; mode "delay" restarts it once
//     enough restarts have left the window that the new one fits, and never
//     sooner than delay.
//
// The window slides (unlike Nomad's fixed window that resets once the
// interval has passed), so the invariant is simple: a task never restarts
// more than attempts times within any interval. There is no jitter: the
// decision is deterministic.
//
// Importers: client/allocrunner and its taskrunner. It imports drivers (ExitResult)
// and nomad/structs (RestartPolicy) only.
package restarts
