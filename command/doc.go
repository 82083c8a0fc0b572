// Package command implements the drover command-line interface: the `job`,
// `deployment`, `alloc`, `node` and `eval` commands and the others (`acl`,
// `namespace`, `operator`, `tls`, `nodesim`, ...), built on the MPL-2.0
// nomad/api client module, plus the dispatch to the agent in
// command/agent.
//
// Commands mirror the flags, output layout and exit codes of Nomad's CLI so
// that scripts written for `nomad` work unchanged against `drover`. The code
// is our own: rendering is done by small pure functions (format.go,
// monitor.go, plan_diff.go, ...) that take api structs and return strings, so
// they can be tested without a server.
//
// Only cmd/drover imports this package, through Run.
package command
