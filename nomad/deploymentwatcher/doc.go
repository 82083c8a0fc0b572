// Package deploymentwatcher watches the deployments of system and service
// jobs on the leader: it turns allocation health into the next rollout
// wave, fails deployments (unhealthy allocations, progress deadline) with
// auto-revert to the newest stable job version, auto-promotes canaries,
// and marks the job version of a successful deployment stable. What these
// mean for each job type is specified in docs/semantics.md.
//
// It is layered like a raft node (see docs/architecture.md, "The pure-core
// rule"):
//
//   - Machine (machine.go, decide.go, events.go, signals.go, gates.go) is a pure
//     state machine per deployment: Step(event, now) returns effects as
//     data and the time it wants to be woken. It reads no state, no clock,
//     starts nothing.
//   - Watcher (watcher.go) is the driver: one goroutine per active
//     deployment that only waits (a blocking query on the deployment, its
//     allocations and its job, or the machine's wakeAt on the Clock), calls
//     Step and carries the effects out through Backend, which the server
//     implements with raft writes (nomad/deployment_watcher_shim.go).
//
// The decisions in decide.go (revert target, failure, canary health) are
// also used by the server's deployment endpoints, so that `deployment fail`
// and `deployment promote` decide as the watcher does.
//
// Vocabulary:
//
//   - progress: an allocation of the deployment became healthy. It pushes
//     its group's progress deadline to now + progress_deadline and asks the
//     scheduler (CreateEval) for the next wave.
//   - settled group: complete (HealthyAllocs >= DesiredTotal, promoted if
//     it has canaries), or all its canaries healthy and awaiting promotion.
//     Settled groups have no progress deadline.
//   - complete deployment: every group complete.
//
// Lifecycle of a Machine (events in brackets):
//
//	          NewMachine, [Init]
//	                  │
//	                  ▼
//	            ┌───────────┐    [Paused]    ┌────────────┐
//	            │  running  │───────────────►│   paused   │
//	            │           │◄───────────────│ (deadline  │
//	            └───────────┘   [Resumed]    │  frozen)   │
//	             │    │    │                 └────────────┘
//	       (1)(2)│    │(3) │(4)                 │(1)   │(3)  (4)
//	             ▼    │    ▼                    ▼      ▼
//	     ┌────────┐   │  ┌─────────┐         failed  successful
//	     │ failed │   │  │ stopped │
//	     └────────┘   ▼  └─────────┘
//	          ┌────────────┐
//	          │ successful │
//	          └────────────┘
//
//	(1) [AllocHealthChanged] an allocation is unhealthy (and not stopped by
//	    the server) → UpdateStatus{failed, "Failed due to unhealthy
//	    allocations" + revert suffix, RevertJob?} + CreateEval + Stop
//	(2) [Tick] a group that is not settled reached its progress deadline →
//	    the same with "Failed due to progress deadline"
//	(3) the deployment is complete → MarkStable + UpdateStatus{successful,
//	    "Deployment completed successfully"} (+ CreateEval when a group
//	    has drover.surge: the last wave's old allocations stop) + Stop
//	(4) [JobChanged] (newer version, stop, purge: the scheduler cancels), or
//	    a terminal status written by someone else → Stop (MarkStable first
//	    if that status is successful)
//
// While running: [AllocHealthChanged] with progress → CreateEval and the
// group's deadline pushed; canaries all placed and healthy with
// auto_promote everywhere → Promote + CreateEval; [Promoted] restarts the
// promoted groups' deadlines. On a revert, the CreateEval is committed with
// the status update and evaluates the reverted version, which gets a
// deployment of its own.
//
// Pause: pausing freezes the progress deadline (no Tick is asked for, none
// fails the deployment); resuming restarts every group's deadline at
// now + progress_deadline, in the machine and in the state store, so a long
// pause never fails a deployment the moment it resumes. An unhealthy
// allocation still fails a paused deployment.
//
// Runtime signals (signals.go): a group's drover.auto_fail_on fails the
// deployment, running or paused, and its drover.auto_pause_on pauses a
// running one, on counts of restarts, OOM kills, image pull failures and
// unhealthy allocations over the group's allocations; after a resume a
// pause needs counts above those the state store recorded at resume.
//
// Metric and webhook gates (gates.go, gateio.go): a group's
// drover.analysis_query and drover.gate_webhook make its later waves, its
// auto-promotion and (metric gate) its success wait at checkpoints until
// its gates pass; the scheduler holds the next wave meanwhile
// (structs.GateHoldsWave). Too many failed evaluations fail the
// deployment; no data, an error or a webhook refusal pause it, and the
// gate that paused it resumes it once it passes. The machine returns the
// calls as effects (QueryMetric, CallWebhook); the driver makes them
// (GateRunner, HTTPGates) and steps each answer (GateAnswered). The gate
// state that must survive a failover is in the deployment
// (DeploymentState.Gate), written with UpdateStatus.
//
// Who may import it: the server (package nomad). It imports the state store
// and structs, never the server.
package deploymentwatcher
