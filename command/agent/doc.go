// Package agent runs a Drover agent: a server (nomad), a client (client),
// or both in -dev mode, behind one HTTP listener, and serves the
// Nomad-compatible /v1 API.
//
// Handlers decode the request, call the server's endpoint for the resource
// (a read with nomad.QueryOptions: namespace, prefix, index, wait, stale,
// filter, paging and the caller's resolved ACL; the server authorizes,
// filters, pages and runs the blocking query; a write with the caller's
// resolved ACL, which the server checks again after the route's rule) and
// return (value, index, error); one wrapper encodes JSON, sets the X-Nomad-Index / KnownLeader /
// LastContact headers on every response and maps typed errors to status
// codes (400 for bad input and conflicts, 404 for missing objects); the
// one exception is a client's allocation poll that would wait over plain
// HTTP/1.1, which parks outside net/http and writes the same response
// itself (parked_poll.go). It never reads the state store itself. Writes and default (consistent)
// reads reaching a follower are forwarded to the leader before the handler
// runs. Requests
// under /v1/client/ are served by the agent whose client runs the node, or
// proxied there. Conversions between nomad/api wire types and nomad/structs
// happen at the edges only: here and in helper/apiconv (the client agent,
// the other edge, converts too: client/convert.go). How a request travels
// from here to the state store is in docs/architecture.md.
//
// With a tls block (tls.go), the listener speaks HTTPS, the server's rpc
// port mutual TLS (nomad/cluster), and every call this agent makes to
// another agent (its client to the servers, the /v1/client and client-only
// proxies) goes over HTTPS with the agent's certificate; SIGHUP re-reads the
// certificate and key (ReloadTLS).
//
// Imported by the CLI (command) only.
package agent
