// Package dockertest holds helpers for tests that drive the real Docker
// engine: Client (a client for the local engine, or a LOUD skip when none is
// reachable; set DROVER_REQUIRE_DOCKER=1 to make that a failure instead),
// Pull (pull and report errors hidden in the progress stream), and cleanup of
// the containers and images tests create, which carry the label
// drover.test=1 (Labels).
//
// Importers: tests and test commands only. It imports the Docker client and
// testutil/images (for the label).
package dockertest
