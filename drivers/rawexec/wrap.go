package rawexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/drivers"
)

// Isolated describes a task that another driver (drivers/exec) runs through
// this driver's executor, inside whatever a registered Wrapper sets up.
type Isolated struct {
	// Path is the command as the task sees it (inside its root); it is
	// not checked on the host.
	Path string
	// Args is argv, argv[0] included.
	Args []string
	// Dir is the working directory as the task sees it.
	Dir string
	// Env is the task's environment.
	Env map[string]string
	// UID, GID and Groups are the credentials to run as; nil UID keeps the
	// executor's.
	UID, GID *uint32
	Groups   []uint32
	// Wrapper names the Wrapper (RegisterWrapper) the executor calls;
	// Spec is handed to it unchanged.
	Wrapper string
	Spec    json.RawMessage
}

// Wrapper runs in the executor process, before the task starts: it may
// rewrite cmd (the task's command, in its own process group, with its
// output files and credentials) to start something that isolates the task,
// and says how to read the task's exit afterwards.
type Wrapper func(cmd *exec.Cmd, spec json.RawMessage) (*Wrapped, error)

// Wrapped is what a Wrapper returns; every field may be nil.
type Wrapped struct {
	// Started runs once cmd has started; an error kills cmd's process
	// group and fails the start with that error.
	Started func() error
	// Exit computes the task's exit from cmd's process state.
	Exit func(ps *os.ProcessState) (code, signal int, oomKilled bool)
	// Cleanup runs once cmd has exited (or failed to start).
	Cleanup func()
}

var (
	wrappersMu sync.RWMutex
	wrappers   = map[string]Wrapper{}
	helpers    = map[string]func(args []string) int{}
)

// RegisterHelper makes MaybeRunExecutor run fn(os.Args[2:]) and exit with
// its result when os.Args[1] == arg; drivers register the processes they
// re-execute the binary as. arg should start with "__drover_". It panics if
// arg is registered twice.
func RegisterHelper(arg string, fn func(args []string) int) {
	wrappersMu.Lock()
	defer wrappersMu.Unlock()
	if _, dup := helpers[arg]; dup || arg == ExecutorArg {
		panic("rawexec: helper " + arg + " registered twice")
	}
	helpers[arg] = fn
}

func helper(arg string) func([]string) int {
	wrappersMu.RLock()
	defer wrappersMu.RUnlock()
	return helpers[arg]
}

// RegisterWrapper makes w available to executors under name. Packages call
// it from init, so the executor (a re-execution of the same binary) has it
// too. It panics if name is registered twice.
func RegisterWrapper(name string, w Wrapper) {
	wrappersMu.Lock()
	defer wrappersMu.Unlock()
	if _, dup := wrappers[name]; dup {
		panic("rawexec: wrapper " + name + " registered twice")
	}
	wrappers[name] = w
}

func wrapCommand(cmd *exec.Cmd, spec *execSpec) (*Wrapped, error) {
	wrappersMu.RLock()
	w := wrappers[spec.Wrapper]
	wrappersMu.RUnlock()
	if w == nil {
		return nil, fmt.Errorf("executor: unknown wrapper %q", spec.Wrapper)
	}
	wr, err := w(cmd, spec.WrapperSpec)
	if err != nil {
		return nil, err
	}
	if wr == nil {
		wr = &Wrapped{}
	}
	return wr, nil
}

// WaitStatus returns the exit code and the signal that ended a process; a
// process killed by a signal gets exit code 128+signal, like a shell.
func WaitStatus(ps *os.ProcessState) (code, sig int) { return waitStatus(ps) }

// NewIsolated returns a driver named name that runs tasks only through
// StartIsolated (its StartTask refuses). It is always enabled; the caller
// decides whether it may run.
func NewIsolated(logger hclog.Logger, name string) *Driver {
	d := New(logger)
	d.name = name
	d.enabled = true
	d.isolated = true
	return d
}

// StartIsolated starts the task described by iso through an executor, like
// StartTask starts a raw_exec task, and returns once the task runs (once
// the wrapper's Started returned).
func (d *Driver) StartIsolated(cfg *drivers.TaskConfig, iso Isolated) (*drivers.TaskHandle, error) {
	if cfg == nil || cfg.ID == "" {
		return nil, errors.New(d.name + ": task config with an ID is required")
	}
	if cfg.TaskDir == "" {
		return nil, errors.New(d.name + ": task dir is required")
	}
	if iso.Path == "" || len(iso.Args) == 0 || iso.Wrapper == "" {
		return nil, errors.New(d.name + ": isolated start needs a path, argv and a wrapper")
	}
	if err := os.MkdirAll(cfg.TaskDir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: creating task dir: %w", d.name, err)
	}
	return d.start(cfg, execSpec{
		Path: iso.Path, Args: iso.Args, Env: envList(iso.Env), Dir: iso.Dir,
		StdoutPath: cfg.StdoutPath, StderrPath: cfg.StderrPath, LogLimits: cfg.LogLimits,
		UID: iso.UID, GID: iso.GID, Groups: iso.Groups,
		Wrapper: iso.Wrapper, WrapperSpec: iso.Spec,
	})
}

// LookupUser returns the credentials to run as name, or nils when name is
// empty or the agent's own user; another user needs the agent to be root.
func LookupUser(name string) (uid, gid *uint32, groups []uint32, err error) {
	return lookupUser(name)
}

// killGroup SIGKILLs the process group led by pid.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }

// TaskInfo is what an isolating driver may read of one of its tasks.
type TaskInfo struct {
	Config *drivers.TaskConfig
	// State's TaskPID is the process the wrapper started (for
	// drivers/exec, the namespace init).
	State  State
	Exited bool
}

// Task returns what the driver knows of task taskID.
func (d *Driver) Task(taskID string) (TaskInfo, error) {
	t, err := d.get(taskID)
	if err != nil {
		return TaskInfo{}, err
	}
	return TaskInfo{Config: t.cfg, State: t.state, Exited: t.exited()}, nil
}

// ProcessAlive reports whether process pid runs and, when startTime is not
// zero, is the one that started then (not a later process given the same
// PID).
func ProcessAlive(pid int, startTime uint64) bool { return processAlive(pid, startTime) }

// RunExec runs cmd, prepared by an isolating driver's ExecTask, as
// ExecTask runs its commands: in a session of its own (attr.Setsid is set;
// the session is killed when ctx ends), on a new pseudo-terminal with
// opts.Tty, else with pipes; attr's other fields are kept.
func RunExec(ctx context.Context, cmd *exec.Cmd, attr *syscall.SysProcAttr, opts *drivers.ExecOptions) (*drivers.ExitResult, error) {
	attr.Setsid = true
	if opts.Tty {
		return execTTY(ctx, cmd, attr, opts)
	}
	return execPiped(ctx, cmd, attr, opts)
}

// EnvList returns env as sorted "key=value" strings.
func EnvList(env map[string]string) []string { return envList(env) }
