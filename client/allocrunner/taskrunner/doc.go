// Package taskrunner runs one task of an allocation with its driver: it
// builds the driver's TaskConfig (ID "<alloc>/<task>", environment,
// interpolated config, directories, log files), validates and prepares the
// task, starts it, persists its handle, waits for it, applies the restart
// policy (package restarts) and kills it with its kill signal and timeout.
// Its state and events have Nomad's shape (pending, running, dead;
// "Received", "Started", "Terminated", "Restarting", ...), each change
// persisted in the StateDB and reported through OnStateChange.
//
// Lifecycle of a task (events in quotes):
//
//	New ──► pending "Received"
//	          │
//	          │ Prepare: "Task Setup", validate ("Failed Validation" ──► dead, failed)
//	          │          driver prepare step: "Driver" progress events
//	          │          (failure or timeout: "Driver Failure" ──► dead, failed)
//	          ▼
//	        prestart hooks, in order (prestart.go), before every start:
//	          artifacts: "Downloading Artifacts", fetch the artifact blocks
//	          not fetched yet ── error ──► "Failed Artifact Download" ──┐
//	          ▼                                                          │
//	        start ── error ──► "Driver Failure" ─┐                       │
//	          │                                  │ ◄─────────────────────┘
//	          │                                  │
//	          ▼ "Started"                        │
//	        running ── exit ──► "Terminated" ────┤
//	          │                                  ▼
//	          │                           restarts.Evaluate
//	          │             restart ◄────────┘   │    │
//	          │   pending "Restarting"           │    └ fail: "Not Restarting" ──► dead, failed
//	          │   (delay, then start again)      └ done (sysbatch exit 0) ──► dead
//	          │
//	          └ Kill: [reason event] ["Waiting for shutdown delay"] "Killing"
//	                  StopTask(kill_timeout, kill_signal) "Terminated" "Killed" ──► dead
//	  running ── RestartUnhealthy (check_restart): "Restart Signaled" "Killing",
//	             StopTask ──► "Terminated", then restarts.Evaluate as for an exit
//	  running ── Restart (user): "Restart Signaled" "Killing" "Terminated"
//	             "Restarting" ──► start again at once, outside the restart policy
//
//	Restore: state running + handle ──► RecoverTask ──► running (same process, no new start)
//	                                    └ error: "Failed Restoring Task", then the restart policy
//	Shutdown: Run returns at once; the task keeps running for the next client process.
//
// Start gates: with Config.Gate, every start (the first, and each restart)
// waits until the gate is open; the alloc runner opens it in the task's
// lifecycle phase. A kill while waiting ends the task dead, never started.
// With Config.KeepAfterDone, Run does not return when the task completed
// successfully: it waits for ForceRestart (run again: "Restart Signaled",
// "Restarting") or Kill. Ephemeral lifecycle tasks (prestart and poststart
// without sidecar, poststop) are done when they exit 0, in every job type;
// sidecars are restarted, even in batch jobs (restarts.DoneOnSuccess).
//
// Prepare runs at most once per runner. The alloc runner calls it early for
// "prefetch before kill"; Run calls it itself when the task starts without
// the alloc runner having done so (a restored task waiting to restart). The
// driver config key "prefetch" is consumed here and never reaches the
// driver. Task events keep the last 10; consecutive prepare progress events
// replace each other.
//
// Prestart hooks run before every start, after Prepare: the template hook
// (template_hook.go) renders the task's template blocks with
// consul-template's manager and holds the first start until each rendered
// once; later renders apply their change_mode (restart, signal, script,
// noop). Its runners stop when Run returns.
//
// Importers: client/allocrunner, and the client agent (package client) for
// its errors and the template dialer. It imports drivers, drivers/logrotate,
// nomad/structs, helper/pathguard, the allocdir, restarts, taskenv and
// taskrunner/getter packages, and consul-template (manager, config,
// renderer).
package taskrunner
