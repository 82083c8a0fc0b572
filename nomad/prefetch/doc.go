// Package prefetch lets nodes pull a deployment's new Docker images ahead of
// their wave (docs/semantics.md, "Prefetch ahead of the wave"): when a deployment starts,
// every node that will need the new version's image may pull it at once,
// with at most prefetch_parallel nodes pulling at the same time, so that a
// rollout of W waves pays the pull once, not W times in sequence. The old
// allocation keeps serving throughout: nothing is stopped or placed here.
//
// Layers, as in nomad/deploymentwatcher:
//
//   - Decide (decide.go) is pure: (deployment, job version, allocations,
//     nodes, the record of grants and reports, now) → the new record, the
//     directives to publish per node and when to wake. ApplyReport folds a
//     node's report into the record.
//   - Coordinator (coordinator.go) runs on the leader: one goroutine that
//     waits for a change of deployments, allocations or nodes, a report, or
//     a grant's timeout, calls Decide for every active deployment and
//     publishes the directives, which clients long-poll at
//     GET /v1/internal/node/{id}/prefetch and answer with
//     PUT /v1/internal/node/{id}/prefetch (package command/agent).
//
// Per node and deployment:
//
//	(no record) ──granted (slot free, node needs it, deployment running)──► pulling
//	pulling ──report done──► done        (listed: the client leases the image)
//	pulling ──report failed, or no report within GrantTimeout──► failed (not listed, not granted again)
//	any ──deployment failed / cancelled / successful──► (forgotten: the client cancels unfinished pulls)
//	any ──node down──► (forgotten)
//
// Which nodes need a pull: a ready node (status ready, eligible, not
// draining) with a live allocation of another version of the job whose
// group has no allocation of the deployment's version on it yet, for the
// group's Docker tasks whose config.image (a tag or a pinned
// name:tag@sha256:… reference, compared as written) differs from the one
// the node runs. A node whose wave arrived while it was pulling keeps its
// grant until it reports: it is still pulling (the Docker daemon joins the
// alloc runner's pull of the same image to the one in flight).
//
// Configuration is per Docker task, in config {} (so the official nomad CLI
// passes it through): prefetch_parallel = N, default DefaultParallel (4);
// 0 turns ahead-of-wave prefetch off for the task, as does prefetch = false
// (which also turns prefetch before kill off). A job's limit is the
// smallest N among its prefetching tasks. A paused deployment keeps its
// pulls in flight and grants no new ones; a failed, cancelled or
// successful one lists nothing, so clients cancel the pulls not finished.
//
// The record lives in the leader's memory only. A new leader starts empty
// and grants again: a node that already has the image finds it present and
// reports done at once, and a node's done report without a record is
// accepted as is. Grants are therefore at most prefetch_parallel per
// leader term; a pull the old leader granted may overlap the new leader's.
//
// Importers: the server (package nomad), whose endpoints the agent's HTTP
// edge calls. Decide imports nomad/structs only.
package prefetch
