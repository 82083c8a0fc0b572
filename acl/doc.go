// Package acl is Drover's access-control core: Nomad's policy language (HCL
// or its JSON form) parsed into Policy values, and the compiled ACL object a
// request is checked against.
//
// A Policy holds rules per resource: namespace rules (exact names or globs,
// each with a coarse policy read|write|scale|deny and fine-grained
// capabilities), and node, agent, operator, quota, plugin, node_pool and
// host_volume rules. Compile merges any number of policies into one ACL:
// capabilities add up, an explicit deny anywhere wins, and for the coarse
// areas the strongest grant wins unless one policy denies.
//
// Everything here is pure: no I/O, no clocks, no state store. Token lookup,
// expiry and workload identities live at the edge (command/agent, nomad/),
// which import this package, as does the client agent (client) for its own
// /v1/client endpoints; acl imports nothing of Drover's.
package acl
