// Package chaos is Drover's fault-injection suite: it starts a cluster of
// real drover server processes, each in its own cgroup and on its own
// loopback address, injects seeded faults (iptables partitions matched by
// cgroup, packet loss, SIGSTOP/SIGCONT, kill -9 and restart) while workers
// issue operations through the nomad/api client, records every
// operation's invoke and return time, and checks the histories:
// linearizability of the default-consistency operations with porcupine
// (a check-and-set register, a lock), stale reads never from the future,
// nothing acknowledged by a server cut off from its majority. Beside it,
// orchestration tests run real client agents (raw_exec) in their own
// cgroups: a system rollout under server faults, whose deployments may
// never succeed while a node of their version is unhealthy, and clients
// cut from every server or paused past their heartbeat TTL, with tasks
// that hold a lock per allocation name or node so that two live copies
// are seen.
//
// The pure parts (Schedule, the models and checks, the table) have their
// own tests; TestChaos runs a short seeded suite (`go test ./e2e/chaos`)
// and `make chaos SEED=...` a long one. It needs root, iptables with the
// cgroup match, and a cgroup2 hierarchy; without them it skips loudly.
//
// Nothing imports this package.
package chaos
