// Package lifecycle decides, purely, how the tasks of one allocation are
// ordered by their `lifecycle` blocks, as Nomad orders them:
//
//	prestart   started first. The main tasks start once every ephemeral
//	           prestart task (sidecar = false) has completed successfully
//	           and every prestart sidecar is running.
//	main       tasks without a lifecycle block.
//	poststart  started once every main task is running (or has run).
//	poststop   started once every other task is dead, whatever the reason:
//	           completion, failure, a leader's death, or a stop of the
//	           allocation by the server (not a Destroy, not a client
//	           shutdown). Never started when no task of the allocation
//	           ever started: there is nothing to clean up.
//
// Phases only move forward (a sidecar restarting per its restart policy
// does not hold the main tasks back again), except that an operator's
// `alloc restart` of the whole allocation starts over at prestart.
//
// Kills: a task that failed for good (after its restart attempts) kills
// every other live task but the poststop ones ("Sibling Task Failed"), so
// a failed ephemeral prestart task fails the allocation and its main tasks
// never start; a dead leader kills the others ("Leader Task Dead"); when
// only sidecars are left alive they are killed ("Main Tasks Dead") and end
// dead but not failed. Killing is staged: sidecars are killed only once
// the other live tasks are dead, so a sidecar outlives what it serves
// (except on a Destroy, which kills every task at once).
//
// Decide is a pure function of the tasks' roles, their states and the
// phase reached so far; the alloc runner calls it on every task state
// change and carries out what it returns (opening start gates, killing).
//
// Importers: client/allocrunner and its sub-packages. It imports only
// nomad/structs.
package lifecycle
