// Package health decides an allocation's deployment health on the client
// and runs the Nomad-native service checks that feed the decision.
//
// Vocabulary:
//
//	tracking     the client watches an allocation of a deployment whose
//	             group has an update block with health_check "checks" or
//	             "task_states" and whose health the server has not set
//	Start        when tracking began (the runner started, or the allocation
//	             joined a new deployment); persisted across client restarts
//	ready at R   every task that must run is running (and, in "checks"
//	             mode, every healthiness check passes), without a break
//	             since R - min_healthy_time, and R - min_healthy_time is
//	             not before Start
//	deadline     Start + healthy_deadline
//	decided      healthy or unhealthy; final for the deployment (Record)
//
// Decision (Evaluate, pure, `now` a parameter), in order:
//
//	a task failed, or every task is dead          unhealthy at once
//	ready at R ≤ now                              healthy if R ≤ deadline, else unhealthy
//	now ≥ deadline                                unhealthy
//	otherwise                                     undecided; WakeAt = min(R, deadline)
//
// A restart or a failing check moves R later (min_healthy_time starts
// over). "manual" never decides: health comes from
// /v1/deployment/allocation-health/:id. Tasks whose end is expected (a completed batch/sysbatch task, a
// non-sidecar lifecycle task) need not run; an allocation whose tasks all
// ended that way is healthy at once.
//
// Checks: ResolveChecks (pure) turns the group and task services of
// provider "nomad" into CheckDefs with addresses from the allocation's
// group ports (the task environment's NOMAD_IP_<label> and
// NOMAD_HOST_PORT_<label>). A Checker runs each check in a goroutine at its
// interval with its timeout (Probe: HTTP 2xx/3xx passes, redirects not
// followed; TCP passes on connect) and keeps the latest results;
// initial_status = "passing" starts a check passing. Script checks
// (ProbeWith and a TaskExec) run their command inside their task through
// the driver's exec: exit 0 is "success", 1 "warning", anything else and
// the timeout "failure" (ScriptOutcome, pure); while the task is not
// running they are not run, and run again when a task state changes
// (Checker.Wake). Checks with on_update = "ignore" are readiness checks:
// reported, not counted; with "ignore_warnings" a warning counts as
// passing (CheckResult.Healthy), otherwise a warning is not healthy. The
// prober is injectable, so loops are tested in a synctest bubble.
//
// check_restart: ObserveRestart (pure) counts a check's unhealthy results
// in a row, skipping those while its task is not running or within grace
// of the task's latest start; at limit the Checker calls
// CheckerConfig.Restart, which restarts the task through its restart
// policy ("Restart Signaled": health check: check "<name>" unhealthy).
//
// Importers: client/allocrunner (its health hook), the client agent (check
// results), client/state (persisted records) and the node simulator
// (nodesim, which decides health with Evaluate). It imports nomad/structs
// and client/allocrunner/taskenv.
package health
