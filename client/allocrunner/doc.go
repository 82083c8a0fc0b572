// Package allocrunner runs one allocation on a client: it builds its
// directories, prepares its tasks (prefetch before kill), stops the
// allocation it replaces on the node, runs a task runner per task
// (taskrunner), derives the allocation's client status from the task
// states, and reports that state through Config.StateUpdater. The client
// agent creates one AllocRunner per allocation it is assigned.
//
// Sub-packages: taskrunner (one task), lifecycle (the pure ordering of
// prestart, main, poststart and poststop tasks), restarts (the pure
// restart policy), health (the pure deployment health decision and the
// service check runner), taskenv (environment and ${...} interpolation),
// allocdir (directory layout).
//
// Lifecycle:
//
//	NewAllocRunner ──[Restore]──► Run
//	                               │
//	                               ├─ every task "Received"
//	                               ├─ prerun hooks, in order:
//	                               │    alloc_dir   build <root>/<alloc>/{alloc/{logs,data,tmp},<task>/{local,secrets,tmp}}
//	                               │    health      start service checks and deployment health tracking
//	                               │    prepare     prepare tasks ── failure ──► task failed, previous alloc untouched
//	                               │                PrevAlloc.Stop(); PrevAlloc.Wait()
//	                               │                prepare tasks with prefetch = false
//	                               │    migrate_disk  (ephemeral_disk sticky/migrate) previous alloc's alloc/data
//	                               │                and <task>/local: moved (same node) or fetched (Config.PrevData)
//	                               │    network     (mode bridge or cni/<name>) the allocation's namespace,
//	                               │                made or reattached by Config.Network (client/network)
//	                               ├─ task runners run (start, wait, restart per policy),
//	                               │    each behind its lifecycle gate (lifecycle.go):
//	                               │    prestart ─► main ─► poststart; a failed task (or a
//	                               │    dead leader) kills its siblings; sidecars left alone
//	                               │    are killed; then poststop
//	                               │
//	     Update(desired stop) ─────┤─ kill: prekill hooks (group shutdown_delay), then
//	     StopTasks, Destroy        │        the tasks (kill_signal, kill_timeout): sidecars
//	                               │        after the others, then poststop tasks run
//	                               │        (not on Destroy)
//	                               ▼
//	                       every task dead ──► TasksExitedCh closed, postrun hooks (the namespace
//	                                           goes), Run returns
//
//	Shutdown: Run returns, tasks keep running (the next client process Restores them).
//	Destroy:  kill (running Run if needed), forget the tasks in their drivers, destroy hooks
//	          (remove the alloc dir, delete the persisted state). Idempotent.
//
// Deployment health (hook_health.go): for an allocation of a deployment
// whose group's update block says health_check = "checks" or
// "task_states", and whose health the server has not set, a goroutine
// calls health.Evaluate on every task state and check status change and at
// the WakeAt it returns. The first decision is persisted (HealthDB) and
// published as the allocation's DeploymentStatus (the server's canary flag
// kept) with every later update; it is final for the deployment, also
// across client restarts, which resume tracking with the original deadline.
// An unhealthy decision adds an "Alloc Unhealthy" event with the reason to
// every task. An in-place update into another deployment tracks afresh. A
// killed or shut down runner stops tracking undecided. Published updates
// never echo the server's DeploymentStatus: without a client decision it is
// nil, which leaves the server's as it is. A service allocation outside any
// deployment is tracked the same way with its group's migrate block
// (health_check, min_healthy_time, healthy_deadline): the server waits for
// that verdict before a drain migrates the group's next allocation.
//
// Lifecycle (lifecycle.go, deciding with package lifecycle): every task
// runner starts behind a closed gate; on every task state change the
// runner asks lifecycle.Decide which phase the allocation is in (prestart,
// main once every ephemeral prestart task completed and every prestart
// sidecar runs, poststart once every main task runs, poststop once every
// other task is dead), opens the gates that phase allows and kills what
// the decision names. A task's gate holds every start of it, restarts
// included; phases only move forward, except that an operator's restart of
// the whole allocation (Restart with no task) starts over at prestart.
// Ephemeral lifecycle tasks are not restarted when they exit 0 (restarts.
// DoneOnSuccess); their runners wait (taskrunner KeepAfterDone) so that
// `alloc restart -all-tasks` can run them again, and are released once
// every task is dead. Poststop tasks do not count for deployment health.
// A client restart resumes from lifecycle.ResumePhase.
//
// max_run_duration (maxrun.go, pure maxRunBound/maxRunStart/maxRunLeft):
// a batch or sysbatch allocation whose group sets it is stopped when it is
// up, counted from Run (a restored allocation: from the earliest time its
// task states record), whatever the tasks' states. The tasks are killed
// with a "Max Run Duration Exceeded" event (their shutdown_delay and
// kill_timeout come after the bound), poststop tasks never run, and the
// allocation completes with "allocation exceeded max_run_duration". An
// in-place update's new bound applies at once.
//
// Client status (ClientStatus, pure): failed if a task failed, else running
// if a task runs, else pending if a task has not started (or waits to
// restart), else complete.
//
// Prefetch before kill, in full: when Config.PrevAlloc is set (the
// allocation replaces a local one), every task whose driver implements
// drivers.Preparer is prepared (Docker: image pulled) while the previous
// allocation keeps running; only once all are prepared does the runner call
// PrevAlloc.Stop and PrevAlloc.Wait, then start its tasks. A prepare that
// fails or exceeds the prepare timeout (the update block's
// healthy_deadline, else 5m) never stops the previous allocation: the task
// fails with a "Driver Failure" event carrying the driver's error and the
// allocation fails. The server stops the previous allocation in the plan
// that places the replacement; a previous allocation whose controller came
// from LocalPrevAlloc defers that desired stop to its replacement (the hold
// ends when the replacement is killed or destroyed without having stopped
// it, and the deferred stop is then carried out; a replacement whose
// prepare failed keeps holding it). A task with `prefetch = false` in its
// driver config is prepared after the previous allocation stopped (Nomad's
// kill-then-pull).
// Progress is reported as "Driver" task events (bytes and percent in
// Details), at most one a second.
//
// Sticky and migrating ephemeral disks (hook_migrate_disk.go): a
// replacement of a group whose ephemeral_disk is sticky or migrate takes
// its previous allocation's alloc/data and each task's local/ after the
// previous allocation stopped and before its own tasks start: renamed from
// the previous allocation's tree on the same node (which no longer holds
// them), or, with migrate and the previous allocation on another node,
// restored from that node's snapshot (Config.PrevData; the client fetches
// it over the previous node's client API). Best effort as in Nomad: data
// that cannot be had leaves empty directories and a "Task Setup" event; an
// archive entry that would leave the allocation directory fails the
// allocation (a "Setup Failure" naming the entry).
//
// Known limits: the restart policy has no jitter; directory variables (NOMAD_ALLOC_DIR, ...) are host paths.
//
// Importers: the client agent (package client). It imports drivers,
// nomad/structs, go-hclog and its sub-packages.
package allocrunner
