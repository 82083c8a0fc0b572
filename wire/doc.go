// Package wire holds the bodies of every request and answer Drover owns:
// the internal client protocol between client agents (client, nodesim) and
// servers under /v1/internal/node/..., with its routes, and Drover's
// extensions of the Nomad HTTP API (image updates, the rollout view, ahead
// of wave prefetch). The Nomad-compatible bodies are nomad/api's and are not
// repeated here. call.go is how an internal call travels (NewRequest,
// ReadAnswer, StatusError), shared by the two callers.
//
// Each body is declared once: the server's HTTP adapter (command/agent)
// encodes and decodes the same type the client agent, the node simulator and
// the CLI (command) do, so a renamed field renames both sides. The JSON names
// are the protocol: wire_test.go holds them, so a change to one fails a unit
// test rather than an end-to-end one, and every body round-trips with every
// field set.
//
// Importers: command/agent, command, client and nodesim; never the server
// (nomad/...) or the scheduler, which do not see nomad/api types. It imports
// nomad/api, nomad/structs and the standard library only (cmd/drover's
// TestLayers holds this). Conversions between nomad/api and nomad/structs
// types are helper/apiconv's.
package wire
