// Package broker is the leader's evaluation broker: the queue between the
// evaluations the leader creates and the scheduler workers that process them.
//
// # Lifecycle of an evaluation
//
// Only the leader's broker is enabled (SetEnabled); a disabled broker ignores
// Enqueue and answers ErrNotEnabled, and disabling drops everything it holds.
//
//   - Enqueue accepts pending evaluations only and ignores IDs it already
//     knows. An evaluation with WaitUntil in the future (or, without
//     WaitUntil, Wait > 0) waits until then before it is enqueued for real.
//   - At most one evaluation per job (namespace + job ID) is in flight: ready,
//     outstanding, waiting out a nack delay, or failed and not yet acked.
//     Others wait in a per-job pending list. Ack of the in-flight one makes
//     the newest pending one (highest CreateIndex) ready and cancels the
//     rest: every evaluation reconciles the whole job against the newest
//     state, so the newest does the work of all, and a burst of N job
//     versions costs a bounded number of scheduling passes, not N. The
//     broker forgets cancelled evaluations and hands them to the leader
//     (CancelledCh, TakeCancelled), which records them with status
//     "canceled". Delayed evaluations (WaitUntil, Wait) join the pending
//     list only once their time has come.
//   - Ready evaluations are queued per scheduler type (Evaluation.Type:
//     "system", "sysbatch", "_core") by priority, then CreateIndex, then
//     arrival. Dequeue takes the best one among the requested types, marks
//     it outstanding under a fresh token and starts its nack timer.
//   - Ack ends the evaluation. Nack, or the nack timer expiring after
//     NackTimeout, re-enqueues it after InitialNackDelay (first delivery) or
//     SubsequentNackDelay (later deliveries). OutstandingReset restarts the
//     timer (workers planning a long evaluation); PauseNackTimeout and
//     ResumeNackTimeout stop and restart it (the plan applier, while the plan
//     waits in its queue).
//
// # Failed evaluations
//
// An evaluation nacked after DeliveryLimit deliveries goes to the ready queue
// named FailedQueue ("_failed") instead, still holding its job's slot. This is
// the failed-eval path: a leader worker dequeues FailedQueue (the evaluation
// keeps its own Type; IsFailed tells that it came from FailedQueue), writes
// it back with status "failed", creates a follow-up evaluation (TriggeredBy
// "failed-follow-up", delayed with WaitUntil so it runs later), and then acks
// the failed one, which releases the job to its next pending evaluation.
// Outstanding failed evaluations have a nack timer too; a nack puts them
// straight back in FailedQueue.
//
// # Structure
//
// The decisions live in queueState, a pure single-threaded core whose methods
// take the current time and return what changed (queues to wake) and expose
// the next deadline. Broker is the thin shell around it: a mutex, the blocked
// Dequeue callers, and a single timer armed for the core's next deadline,
// created through the injectable Clock. Every core call first fires all
// deadlines up to its "now", so outcomes depend on time, not on when timer
// goroutines get scheduled.
//
// Importers: the server (package nomad). It imports helper/clock and
// nomad/structs.
package broker
