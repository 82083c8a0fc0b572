// Package nodesim is the node simulator (`drover nodesim`): many simulated
// client nodes in one process, each a real client of the servers over the
// same internal HTTP protocol as the client agent and nothing else.
//
// Every node has its own ID and secret, registers (PUT
// /v1/internal/node/register), heartbeats at about half the TTL the
// servers hand out (PUT /v1/internal/node/{id}/heartbeat, jittered as the
// client agent does), long-polls its allocations (GET
// /v1/internal/node/{id}/allocs) and reports their status (PUT
// /v1/internal/node/{id}/allocs), coalescing a node's reports over
// Config.UpdateInterval like the client agent's flush loop.
//
// Nodes advertise a healthy `mock` driver and run mock tasks without
// processes: a task's config is parsed by the mock driver's own parser
// (mock.ParseScript) and its timeline computed from it (simAlloc.timeline:
// prepare_for, prepare_error, start_block_for, start_error, run_for,
// exit_code, kill_after). Deployment health is decided by the client's own
// pure decision (client/allocrunner/health.Evaluate) from the group's
// update block (health_check, min_healthy_time, healthy_deadline). Not
// simulated: restarts (a failed task fails its allocation), service
// checks ("checks" mode sees no checks, so it behaves as task_states),
// logs, and the client's prefetch-before-kill hold (a desired stop stops
// the old allocation at once).
//
// Cost per node: one goroutine (the pending long poll) and its
// connection; heartbeats, task transitions and status flushes run from
// runtime timers. HTTP connections are shared across nodes through one
// transport.
//
// Importers: command (the CLI) and tests. It imports the nomad/api wire
// types, drivers/mock (config parsing), client/allocrunner/health and
// nomad/structs constants; never server packages.
package nodesim
