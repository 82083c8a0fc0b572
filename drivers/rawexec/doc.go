// Package rawexec is the raw_exec task driver: it runs a command directly on
// the host, without isolation, as the client agent's user (or the task's
// user when the agent runs as root).
//
// Each task is supervised by an executor: a re-execution of the current
// binary (os.Executable) with os.Args[1] == "__drover_executor", in its own
// session, so it is not a child that dies or is reaped with the client. The
// executor starts the task in its own process group (so signals reach
// grandchildren), copies its stdout and stderr from pipes to the task's
// rotated log files (drivers/logrotate, with the task config's LogLimits;
// the executor outlives the client, so rotation goes on while the client
// is down), waits for it and for its output to drain, writes its exit
// (code, signal) atomically to exit.json in the task's private dir
// (TaskConfig.PrivateDir, outside the task's reach; State.ExitFile names
// it, and a handle without it, from an older client, is read at
// <TaskDir>/.drover-exit.json) and exits. A restarted client therefore finds
// the task still running with RecoverTask, and still learns its exit code,
// even if the task ended while the client was down. The binary's main (and
// TestMain of tests that start tasks) must call MaybeRunExecutor first.
//
// Task config: command (required; a bare name is looked up in the task's
// PATH, a relative path is taken from the task dir), args (list of strings),
// work_dir (relative to the task dir). Plugin config: enabled (default false,
// as in Nomad: a disabled driver fingerprints undetected, "disabled"),
// no_cgroups (accepted, ignored). The handle's DriverState is
// the JSON of State; start times from /proc/<pid>/stat guard against PID
// reuse. Linux only.
//
// A raw_exec task is not isolated: its command and work_dir are host paths
// by design. The files the driver itself writes are not the task's to
// redirect: the log files must stay inside the allocation's shared dir
// after symlinks (a sibling task may have planted one there); the
// executor's spec and exit record live in the private dir, the spec is
// created afresh (a symlink in its place is replaced) and the exit record
// is read without following a symlink.
//
// Exec (drivers.Execer): a command runs as a child of the client, in the
// task dir, with the task's environment and user, in a session of its own
// that is SIGKILLed as a group when the caller goes away; with Tty, on a new
// pseudo-terminal (github.com/creack/pty) sized as the caller says.
//
// Other drivers reuse this supervision: NewIsolated gives a driver whose
// tasks start through StartIsolated, and RegisterWrapper lets the executor
// hand the task's command to a wrapper that isolates it (drivers/exec starts
// its namespace init instead); RegisterHelper adds re-executions of the
// binary that MaybeRunExecutor dispatches.
//
// Importers: the agent's main (MaybeRunExecutor), drivers/builtin,
// drivers/exec, tests.
// Clients use it through the drivers.Driver interface.
package rawexec
