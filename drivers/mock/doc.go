// Package mock is the "mock" task driver: a scriptable driver that runs no
// processes, for tests of the client and the scheduler path and for the node
// simulator. Tasks are goroutines driven by real timers, so tests use short
// durations or testing/synctest.
//
// The same driver is also registered as "mock_driver", the name the jobs of
// Nomad's own test suites use, with the same keys. One difference: under
// "mock_driver" a task without run_for (or with run_for = 0) exits with
// exit_code once it has written stdout_string and its repeats, where under
// "mock" it runs until stopped.
//
// Task config keys, all optional:
//
//	run_for                 duration ("50ms") or nanoseconds: how long the task runs; 0 = until
//	                        stopped ("mock_driver": until its stdout is written)
//	exit_code               exit code when run_for elapses (0..255)
//	start_error             StartTask fails with this message (a drivers.RecoverableError)
//	start_error_recoverable whether that error is recoverable
//	start_block_for         StartTask blocks this long first
//	prepare_for             PrepareTask takes this long, reporting progress every 100ms
//	                        as if downloading 100MB
//	prepare_error           PrepareTask fails with this message after prepare_for
//	kill_after              StopTask: the task ignores the signal and exits after this
//	                        long, or is SIGKILLed at the stop timeout if that is sooner
//	stdout_string           appended to the stdout log (rotated with LogLimits) when the task starts
//	stdout_repeat           appended that many more times ...
//	stdout_repeat_duration  ... this far apart (all at once when 0)
//	recover_error           RecoverTask fails (wrapping drivers.ErrTaskNotFound)
//
// A stopped task exits with Signal set and ExitCode 128+signal. SignalTask
// records signals (see Driver.Signals); only SIGKILL ends the task. The
// handle's DriverState holds the start time and the config block, so
// RecoverTask in a new driver (a restarted client) re-creates the task for
// the rest of its run_for, or as exited if run_for has elapsed. Prepared
// counts PrepareTask calls, to check "prefetch before kill". Plugin config:
// enabled (default true).
//
// Importers: drivers/builtin, the node simulator, tests of client packages.
// Clients use it through the drivers.Driver and drivers.Preparer interfaces.
package mock
