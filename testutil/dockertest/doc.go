// Package dockertest holds helpers for tests that drive the real Docker
// engine: Client (a client for the local engine, or a LOUD skip when none is
// reachable; set DROVER_REQUIRE_DOCKER=1 to make that a failure instead),
// Pull (pull and report errors hidden in the progress stream), and cleanup of
// the containers and images tests create, which carry the label
// drover.test=1 (Labels).
//
// StartEngine starts a private Docker engine (a dockerd with its own
// containerd, data, state and socket, no bridge, no iptables) and tears it
// down with the test, for benchmarks that need one engine per client node
// (the machine's engine shares pulled images among all its clients). It
// needs root; only opt-in tests and benchmarks use it.
//
// Importers: tests and test commands only. It imports the Docker client and
// testutil/images (for the label).
package dockertest
