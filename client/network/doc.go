// Package network builds and removes the network namespaces of
// allocations whose group asks for network { mode = "bridge" }: one named
// network namespace per allocation, joined to the client's bridge by the
// CNI reference plugins (loopback, bridge with host-local IPAM, firewall,
// portmap), with a port mapping for each of the group's ports.
//
// The decisions are pure and table-tested: which groups get a namespace
// (GroupSpec), the CNI configuration list (Conflist), the port mappings
// (PortMappings) and what a restarted client removes (Orphans). Manager
// carries them out: it creates and deletes namespaces and runs CNI ADD and
// DEL through libcni with a cache under the client's data dir, so that a
// client restarted after a crash can still delete what it added.
//
// Importers: client (the Manager and the node's fingerprint) and
// client/allocrunner (through its NetworkManager interface). Nothing below
// the client imports it.
package network
