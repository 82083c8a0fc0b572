// Package agent runs a Drover agent: a server (nomad), a client (client),
// or both in -dev mode, behind one HTTP listener, and serves the
// Nomad-compatible /v1 API.
//
// Handlers return (value, index, error); one wrapper encodes JSON, sets the
// X-Nomad-Index / KnownLeader / LastContact headers on every response, maps
// typed errors to status codes (400 for bad input and conflicts, 404 for
// missing objects) and runs blocking queries (index, wait). Writes reaching a
// follower are forwarded to the leader before the handler runs. Requests
// under /v1/client/ are served by the agent whose client runs the node, or
// proxied there. Conversions between nomad/api wire types and nomad/structs
// happen here (and in convert/) only.
//
// Imported by the CLI (command) only.
package agent
