// Package planner is the leader's plan queue and plan applier.
//
// Scheduler workers submit plans; one applier goroutine takes them in priority
// order, re-checks each against the newest state (EvaluatePlan, a pure
// function of a snapshot and the plan), commits the part that is still valid
// through raft, and answers the worker. A plan whose part was rejected gets a
// RefreshIndex: the worker re-plans against state at least that new.
//
//	worker ──Submit──▶ queue ──▶ applier: EvaluatePlan(snapshot, plan)
//	   ▲                               │ accepted part
//	   └────────── PlanResult ◀── raft apply (ApplyPlanResults)
//
// Checks per node receiving allocations: the node exists and is ready and
// eligible (in-place updates of allocations already on the node are allowed
// on any node that exists), the node's live allocations plus the plan's fit
// its resources and ports, and no system group gets a second live allocation
// on one node. Stops always commit.
//
// Imported by the server package only.
package planner
