package drivers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/drover-project/drover/drivers/logrotate"
)

// TaskConfig is everything a driver needs to run one task.
type TaskConfig struct {
	ID        string // unique task ID: "<allocID>/<taskName>"
	AllocID   string
	TaskName  string
	TaskGroup string
	JobName   string
	Namespace string

	// Config is the task's driver config block, opaque and JSON-shaped
	// (numbers are float64 or int).
	Config map[string]any
	// Env is the full environment for the task.
	Env  map[string]string
	User string

	AllocDir string // shared alloc dir (<alloc>/alloc)
	// TaskDir is the task dir (<alloc>/<task>), with local/ and secrets/
	// inside; it is the task's working directory.
	TaskDir string
	// PrivateDir is the task's private dir: the driver's own files about
	// the task (an executor's spec and exit record) go there, never in
	// TaskDir, which the task can read and write (and `alloc fs` lists).
	// It exists (mode 0700, the agent's) before StartTask, outside the
	// allocation's tree, and outlives client restarts.
	PrivateDir string
	// StdoutPath and StderrPath are the first files of the task's stdout
	// and stderr (<alloc>/alloc/logs/<task>.stdout.0): a driver writes each
	// stream through a logrotate.Writer opened on it with LogLimits. Empty
	// when the task's logs are disabled: the output is discarded.
	StdoutPath string
	StderrPath string
	// LogLimits bound each stream's files (the task's logs block): a new
	// file is started when one holds MaxFileSize bytes and the oldest
	// beyond MaxFiles are deleted. Zero limits keep one unbounded file.
	LogLimits logrotate.Limits

	// Network is the allocation's own network namespace (group network
	// mode "bridge"); nil runs the task in the host's.
	Network *NetworkIsolation `json:",omitempty"`

	CPU         int // MHz shares requested
	MemoryMB    int
	MemoryMaxMB int // memory_max (oversubscription), 0 when unset

	// Mounts are the task's host volume mounts (volume_mount blocks
	// resolved against the node's host volumes), in order. Drivers with
	// filesystem isolation (docker, exec) bind-mount each; jobs giving
	// other drivers one are refused at registration.
	Mounts []*MountConfig
}

// MountConfig is one host path bind-mounted into a task.
type MountConfig struct {
	HostPath string
	// TaskPath is where the task sees it: a path in the container (docker)
	// or in the task's root (exec); a relative one is taken from "/".
	TaskPath string
	ReadOnly bool
	// PropagationMode is "private" (or ""), "host-to-task" or
	// "bidirectional", as in the volume_mount block.
	PropagationMode string
}

// Copy returns a deep copy of c (Config values are copied one level deep).
func (c *TaskConfig) Copy() *TaskConfig {
	if c == nil {
		return nil
	}
	n := *c
	if c.Config != nil {
		n.Config = make(map[string]any, len(c.Config))
		for k, v := range c.Config {
			n.Config[k] = v
		}
	}
	n.Network = c.Network.Copy()
	if c.Env != nil {
		n.Env = make(map[string]string, len(c.Env))
		for k, v := range c.Env {
			n.Env[k] = v
		}
	}
	if c.Mounts != nil {
		n.Mounts = make([]*MountConfig, len(c.Mounts))
		for i, m := range c.Mounts {
			mc := *m
			n.Mounts[i] = &mc
		}
	}
	return &n
}

// TaskHandle is persisted by the client so it can recover a running task
// after a client restart (see Driver.RecoverTask).
type TaskHandle struct {
	Driver      string
	TaskID      string
	Config      *TaskConfig
	DriverState []byte // opaque, driver-specific (JSON)
	StartedAt   time.Time
}

// ExitResult is how a task ended. ExitCode is 128+Signal when the task was
// killed by a signal.
type ExitResult struct {
	ExitCode  int
	Signal    int
	OOMKilled bool
	Err       error
}

// Successful reports whether the task exited with code 0, not by a signal,
// not OOM killed and without a driver error.
func (r *ExitResult) Successful() bool {
	return r != nil && r.ExitCode == 0 && r.Signal == 0 && !r.OOMKilled && r.Err == nil
}

// String renders the result for task events and logs.
func (r *ExitResult) String() string {
	if r == nil {
		return "<nil>"
	}
	s := fmt.Sprintf("exit code %d", r.ExitCode)
	if r.Signal != 0 {
		s += fmt.Sprintf(", signal %d", r.Signal)
	}
	if r.OOMKilled {
		s += ", OOM killed"
	}
	if r.Err != nil {
		s += ", error: " + r.Err.Error()
	}
	return s
}

// Task states reported in TaskStatus.State.
const (
	TaskStateRunning = "running"
	TaskStateExited  = "exited"
	TaskStateUnknown = "unknown"
)

// TaskStatus is a point-in-time view of a task.
type TaskStatus struct {
	ID          string
	State       string // TaskStateRunning, TaskStateExited or TaskStateUnknown
	StartedAt   time.Time
	CompletedAt time.Time
	ExitResult  *ExitResult // set once State is exited
	Attributes  map[string]string
}

// Fingerprint is a driver's current health, reported in the node's
// Drivers map and attributes.
type Fingerprint struct {
	Detected          bool
	Healthy           bool
	HealthDescription string
	Attributes        map[string]string
}

// Driver runs tasks. Implementations are safe for concurrent use.
type Driver interface {
	// Name is the driver name used in job specs (task.driver).
	Name() string
	// SetConfig applies the agent's plugin "NAME" { config {...} } block.
	SetConfig(plugin map[string]any) error
	// Fingerprint reports current health; cheap, called periodically.
	Fingerprint(ctx context.Context) *Fingerprint
	// ValidateTaskConfig checks a task's driver config block; the error
	// names the field and the rule.
	ValidateTaskConfig(config map[string]any) error
	// StartTask starts a task; the handle is persisted by the client.
	StartTask(cfg *TaskConfig) (*TaskHandle, error)
	// WaitTask returns a channel that yields exactly one result, when the
	// task exits, then closes. A cancelled ctx closes it without a result.
	WaitTask(ctx context.Context, taskID string) (<-chan *ExitResult, error)
	// StopTask sends signal ("" = SIGTERM), then SIGKILL after timeout; it
	// returns when the task has exited.
	StopTask(taskID string, timeout time.Duration, signal string) error
	// DestroyTask forgets the task and cleans up; force kills a running
	// task first, otherwise destroying a running task is an error.
	DestroyTask(taskID string, force bool) error
	// InspectTask reports the task's status.
	InspectTask(taskID string) (*TaskStatus, error)
	// RecoverTask reattaches to a task left running by a previous client
	// process; the error wraps ErrTaskNotFound if it is gone.
	RecoverTask(handle *TaskHandle) error
	// SignalTask sends a signal to the task.
	SignalTask(taskID string, signal string) error
}

// Preparer is implemented by drivers that can prepare a task before it starts
// without needing any other allocation stopped (Docker: pull the image). The
// client runs it first ("prefetch before kill"). progress may be nil.
type Preparer interface {
	PrepareTask(ctx context.Context, cfg *TaskConfig, progress func(PrepareProgress)) error
}

// HostEnvInheritor is implemented by drivers whose tasks run on the host's
// filesystem or a chroot built from it (raw_exec, exec) rather than in an
// image. As in Nomad, their tasks start from the client's environment less
// its env.denylist; tasks of other drivers (docker) get only their own.
type HostEnvInheritor interface {
	InheritsHostEnv() bool
}

// TaskAPIReacher is implemented by drivers whose tasks, though not on the
// host's filesystem, see their secrets dir (docker: at /secrets) and so
// reach the task API socket in it. They are given NOMAD_UNIX_ADDR with the
// host path of the socket and rewrite it to the path the task sees.
type TaskAPIReacher interface {
	ReachesTaskAPI() bool
}

// PrepareProgress reports the progress of a PrepareTask call.
type PrepareProgress struct {
	Message    string
	BytesDone  int64
	BytesTotal int64
}

// Percent is BytesDone/BytesTotal in 0..100, or 0 when the total is unknown.
func (p PrepareProgress) Percent() float64 {
	if p.BytesTotal <= 0 {
		return 0
	}
	return 100 * float64(p.BytesDone) / float64(p.BytesTotal)
}

var (
	// ErrTaskNotFound is returned (possibly wrapped) for an unknown task ID,
	// and by RecoverTask when the task is gone.
	ErrTaskNotFound = errors.New("drivers: task not found")
	// ErrTaskExists is returned by StartTask when the task ID is in use.
	ErrTaskExists = errors.New("drivers: task already exists")
	// ErrDisabled is returned by StartTask when the driver is disabled by
	// its plugin config.
	ErrDisabled = errors.New("drivers: driver is disabled")
	// ErrDriverNotFound is returned by Catalog.Get for an unknown driver.
	ErrDriverNotFound = errors.New("drivers: driver not found")
)

// RecoverableError marks a StartTask (or PrepareTask) failure that may
// succeed if retried; the restart policy may use it.
type RecoverableError struct {
	Err         error
	Recoverable bool
}

// NewRecoverableError wraps err; a nil err gives nil.
func NewRecoverableError(err error, recoverable bool) error {
	if err == nil {
		return nil
	}
	return &RecoverableError{Err: err, Recoverable: recoverable}
}

func (e *RecoverableError) Error() string { return e.Err.Error() }
func (e *RecoverableError) Unwrap() error { return e.Err }

// IsRecoverable reports whether err is, or wraps, a recoverable
// RecoverableError.
func IsRecoverable(err error) bool {
	var re *RecoverableError
	return errors.As(err, &re) && re.Recoverable
}
