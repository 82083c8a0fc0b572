// Package structs holds Drover's server-side domain types: jobs, task groups,
// tasks, nodes, allocations, evaluations, deployments and plans, with their
// validation and diff.
//
// The types are our own. Field names follow the nomad/api wire types so that the
// edges (helper/apiconv, used by command/agent and client) convert between the
// two by name; inside the server,
// fields are values rather than pointers because every stored job has been
// canonicalized. Objects read from the state store are shared and immutable:
// copy before modifying (Copy methods).
//
// Anyone may import this package (the server, the scheduler, the client, the
// HTTP layer and helper/apiconv, the node simulator); of Drover's it
// imports only signals (the signal names a jobspec may give).
package structs
