// Package drivers defines the task driver layer of the Drover client: the
// Driver interface a task runner uses to start, wait for, stop, signal,
// inspect and recover tasks, the optional Preparer step run before a task
// starts ("prefetch before kill": a driver pulls what it needs while the old
// allocation keeps running), the optional Execer that runs a command inside
// a running task (alloc exec; a driver without it answers
// ErrExecNotSupported), and the Catalog of drivers a client offers.
//
// Concrete drivers live in sub-packages and register themselves with
// Register from init: drivers/docker (docker, whose prepare step pulls the
// image), drivers/rawexec (raw_exec), drivers/exec (exec: raw_exec's
// supervision with namespaces, a chroot and cgroup v2 limits) and
// drivers/mock (mock, a scriptable driver for tests and the node
// simulator). Importing
// drivers/builtin links all of them; then NewCatalog builds each one and
// applies the agent's plugin "NAME" { config {...} } blocks:
//
//	import _ "github.com/drover-project/drover/drivers/builtin"
//
//	catalog := drivers.NewCatalog(logger, map[string]map[string]any{
//		"raw_exec": {"enabled": true},
//	})
//	d, err := catalog.Get(task.Driver)
//
// A process that may run raw_exec or exec tasks must call
// rawexec.MaybeRunExecutor first thing in main (and tests in TestMain):
// both re-execute the current binary as the executor that supervises each
// task (and exec, as the init of the task's namespaces).
//
// The package also holds helpers shared by drivers: ParseSignal, and the
// Config* accessors and FieldError for validating opaque driver config
// blocks ("command is required").
//
// Importers: client/allocrunner and its taskrunner (run tasks, exec in them),
// client/allocrunner/restarts (exit results), client fingerprinting
// (Fingerprint), client/state (task handles), the client agent (building
// the Catalog), drivers/builtin and the drivers below it, and tests. It
// imports only drivers/logrotate (TaskConfig.LogLimits), signals (the names
// ParseSignal reads, those registration accepts), go-hclog and the
// standard library.
package drivers
