// Package client is the Drover client agent: it turns a machine into a node
// that runs the allocations the servers place on it.
//
// New loads (or creates) the node identity from <data_dir>/client/state.db,
// fingerprints the host and drivers (package client/fingerprint), recreates
// the alloc runners of the allocations it ran before a restart (reattaching
// to running tasks, not restarting them), then runs four loops:
//
//   - nodeLoop registers the node (PUT /v1/internal/node/register) and
//     heartbeats it (PUT /v1/internal/node/{id}/heartbeat) at about half the
//     TTL the server returns, registering again on 404 or when a driver's
//     fingerprint changed;
//   - watchAllocs long-polls GET /v1/internal/node/{id}/allocs and diffs the
//     list by ID and AllocModifyIndex (computeAllocDiff): new allocations
//     get an alloc runner, changed ones are handed to theirs, allocations the
//     server no longer lists (collected) are destroyed. A list answered at
//     an index below the one applied (a server behind: the list is read
//     stale; the allocations restored at start count as applied) is
//     refused and asked for again on the next server, unless the node
//     registered again since or the servers stay behind for 30 s
//     (behindVerdict). A desired stop is
//     held back while a replacement of the allocation (PreviousAllocation)
//     prepares on this node: the replacement's runner stops it once
//     prepared ("prefetch before kill", computeStopHolds), and a failed
//     prepare leaves it running;
//   - flushLoop batches the runners' status updates, coalesced by
//     allocation, into PUT /v1/internal/node/{id}/allocs at most every
//     200ms, retrying failures without losing updates;
//   - driverLoop fingerprints the drivers every 30s.
//
// With a Docker driver in the catalog (and its gc { image } on), two more
// loops garbage-collect images (images.go, package client/imagegc): the
// lease loop recomputes, after every alloc sync and runner state update,
// the images the alloc runners need (running and prepared allocations, and
// the previous versions of an allocation not yet healthy in its deployment,
// for a revert), and the collector removes the images this client leased
// once they have been unleased for the driver's image_delay.
//
// Every internal call carries the node's secret in X-Nomad-Token; a server
// that cannot be reached is skipped for the next one in Config.Servers.
//
// Node lifecycle as seen from the client:
//
//	New ──> unregistered ──register──> registered ──heartbeat──> registered
//	             ^                        │
//	             └──── 404 / drivers changed
//	Shutdown: loops stop, alloc runners stop supervising (tasks keep
//	running), pending updates get one last flush, the database closes.
//	With StopAllocsOnShutdown (the dev agent), the allocations are first
//	stopped and destroyed, bounded by their longest kill_timeout
//	(exitstop.go).
//
// Handler serves what servers proxy to the client: task logs
// (/v1/client/fs/logs/{alloc}, plain or framed: a task's rotated files,
// <task>.<stream>.<n>, read oldest first as one stream, followed across
// rotations; see logs.go), allocation stats, the
// allocation's service check results and host stats, and exec sessions
// (a websocket at /v1/client/allocation/{id}/exec; see exec.go). It also
// serves a stopped allocation's ephemeral data to its replacement's client
// on another node (ephemeral_disk migrate, migrate.go): the server hands
// the replacement's node the previous node's address and a migrate token
// for that one allocation, keyed by the previous node's secret, which is
// the only credential /v1/client/allocation/{id}/snapshot accepts.
//
// Deployment health is decided by the alloc runners (package
// client/allocrunner/health) and travels as the DeploymentStatus of their
// status updates; an update without one leaves the server's unchanged.
//
// Local state (package client/state) keeps, per allocation, the allocation
// itself, task handles, task states and the deployment health record, so
// a restarted client can restore its runners without a server.
//
// The task API (package client/taskapi): every raw_exec and exec task gets
// a unix socket at secrets/api.sock (NOMAD_UNIX_ADDR) serving the agent's
// HTTP API, which the agent hands over with SetTaskAPIHandler. It always
// wants credentials; with ACLs off it accepts the workload identities the
// servers signed for this client's allocations.
//
// Importers: the agent (command/agent) and tests. It imports
// client/allocrunner (and its health and taskrunner), client/state,
// client/taskapi,
// client/fingerprint, client/imagegc, drivers (with the built-in drivers
// linked through drivers/builtin), acl (the rights of a caller's token),
// nomad/structs, helper/apiconv, helper/sockaddrtmpl, gorilla/websocket
// and the nomad/api wire types.
package client
