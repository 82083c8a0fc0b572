// Package taskprocs finds and ends the task processes a test left behind:
// the raw_exec / exec executors (re-executions of the test binary or of
// drover with os.Args[1] == "__drover_executor", each in a session of its
// own) whose command line names a path under a directory (a client's data
// directory, or the TMPDIR a dev agent made its data directory in), and
// every process of theirs: descendants, members of their sessions, and
// members of process groups led by one of those.
//
// Executors outlive their client on purpose (a restarted client recovers
// its tasks), so a test whose client or agent stops without stopping its
// allocations must end them itself:
//
//	dir := t.TempDir()
//	taskprocs.Cleanup(t, dir) // before the client's own cleanup: runs after it
//
// Find lists them (for assertions that nothing is left), Kill SIGKILLs them
// and waits until they are gone. Linux only (it reads /proc).
//
// Importers: tests only (client, command/agent, drivers, e2e).
package taskprocs
