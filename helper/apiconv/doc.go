// Package apiconv holds the conversions between the nomad/api wire types
// (MPL-2.0, what the official CLI and api client speak) and Drover's domain
// types in nomad/structs. Its importers are the two HTTP edges: the agent's
// API (command/agent) and the client agent's calls to the servers (client).
// The server and scheduler never see api types. It imports nomad/structs and
// the api module only, so both edges may import it without importing each
// other.
//
// The structs types name their fields after the api ones, so most of the
// work is a reflective copy by field name (byname.go) that follows pointers
// in both directions (api fields are mostly pointers, structs fields values)
// and deep-copies driver configs without changing their Go types. What does
// not match by name is done by hand next to each conversion: defaults for
// fields the CLI dereferences, list stubs, the deprecated Allocation.Resources
// that `node status` reads, and the warnings for api job fields Drover does
// not keep (JobFromAPI).
//
// Conversions to api types never share mutable state with their input, so a
// handler may encode the result while the state store keeps the original.
//
// It is the one way between the two type families: the edges neither copy
// through JSON nor by hand what converts by name (docs/architecture.md lists
// the hand copies left in command/agent). The bodies the conversions fill
// are nomad/api's and package wire's.
package apiconv
