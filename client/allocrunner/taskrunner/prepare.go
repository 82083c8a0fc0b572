package taskrunner

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/drover-project/drover/client/allocrunner/allocdir"
	"github.com/drover-project/drover/client/allocrunner/taskenv"
	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/drivers/logrotate"
	"github.com/drover-project/drover/nomad/structs"
)

var (
	// ErrAborted is returned (wrapped) by Prepare when it was interrupted by
	// Kill, Shutdown or its caller's context: not a failure of the task.
	ErrAborted = errors.New("taskrunner: prepare aborted")
	// ErrDead is returned by Prepare for a task that is already dead.
	ErrDead = errors.New("taskrunner: task is dead")
	// errPrepareTimeout is the cause of a prepare context that timed out.
	errPrepareTimeout = errors.New("prepare timed out")
)

// Prepare gets the task ready to start without needing anything else
// stopped: it builds the task's config, validates it with the driver and,
// when the driver is a drivers.Preparer, runs its prepare step (Docker:
// pull the image), reporting progress as Driver events at most once a
// second. It runs once per task runner; later calls return nil at once.
//
// A failure (including a prepare slower than the prepare timeout) marks the
// task dead and failed with a Driver Failure (or Failed Validation) event
// and is returned. When ctx is cancelled, or the runner is killed or shut
// down, it returns an error wrapping ErrAborted and leaves the state alone.
func (tr *TaskRunner) Prepare(ctx context.Context) error {
	tr.mu.Lock()
	done, dead := tr.prepared, tr.state.State == StateDead
	tr.mu.Unlock()
	switch {
	case dead:
		return ErrDead
	case done:
		return nil
	}
	ctx, cancel := context.WithTimeoutCause(ctx, tr.prepareTimeout, errPrepareTimeout)
	defer cancel()
	defer context.AfterFunc(tr.ctx, cancel)()

	tr.emit(eventSetup(tr.now(), "Building Task Directory"))
	if tr.driver == nil {
		return tr.failPrepare(NewDriverFailure(tr.now(), fmt.Errorf("%w: %q", drivers.ErrDriverNotFound, tr.driverName)))
	}
	cfg, err := tr.buildTaskConfig()
	if err == nil {
		err = tr.driver.ValidateTaskConfig(cfg.Config)
	}
	if err != nil {
		return tr.failPrepare(eventFailedValidation(tr.now(), fmt.Errorf("invalid %s config: %w", tr.driverName, err)))
	}
	if p, ok := tr.driver.(drivers.Preparer); ok {
		tr.emit(eventPrepareStart(tr.now()))
		if err := p.PrepareTask(ctx, cfg, tr.onProgress); err != nil {
			if ctx.Err() != nil && !errors.Is(context.Cause(ctx), errPrepareTimeout) {
				return fmt.Errorf("%w: %w", ErrAborted, err)
			}
			if errors.Is(context.Cause(ctx), errPrepareTimeout) {
				err = fmt.Errorf("timed out after %v: %w", tr.prepareTimeout, err)
			}
			return tr.failPrepare(NewDriverFailure(tr.now(), fmt.Errorf("failed to prepare task: %w", err)))
		}
		tr.emit(eventDriver(tr.now(), "Task prepared"))
	}
	tr.mu.Lock()
	tr.prepared = true
	tr.mu.Unlock()
	return nil
}

// failPrepare marks the task dead and failed with ev and returns its error.
func (tr *TaskRunner) failPrepare(ev *structs.TaskEvent) error {
	tr.logger.Error("task failed before starting", "event", ev.Type, "error", ev.DisplayMessage)
	tr.Fail(ev)
	return errors.New(ev.DisplayMessage)
}

// onProgress turns PrepareTask progress into Driver events, at most one per
// progressEvery.
func (tr *TaskRunner) onProgress(p drivers.PrepareProgress) {
	now := tr.now()
	tr.mu.Lock()
	if !tr.lastPrepare.IsZero() && now.Sub(tr.lastPrepare) < progressEvery {
		tr.mu.Unlock()
		return
	}
	tr.lastPrepare = now
	tr.mu.Unlock()
	tr.emit(eventPrepareProgress(now, p))
}

// buildTaskConfig builds the driver's view of the task from the current
// task definition: environment, interpolated config (without the prefetch
// key), directories and log files, resources.
func (tr *TaskRunner) buildTaskConfig() (*drivers.TaskConfig, error) {
	alloc, task := tr.currentAlloc()
	td := tr.allocDir.TaskDir(tr.name)
	if err := writeIdentities(td.Dir, alloc, task); err != nil {
		return nil, err
	}
	var iso *drivers.NetworkIsolation
	if tr.network != nil {
		iso, _ = tr.network()
	}
	env := tr.buildEnv(alloc, task)
	config := maps.Clone(task.Config)
	if _, _, err := drivers.ConfigBool(config, PrefetchKey); err != nil {
		return nil, err
	}
	delete(config, PrefetchKey)
	stdout, err := tr.allocDir.LogPath(tr.name, allocdir.Stdout)
	if err != nil {
		return nil, err
	}
	stderr, err := tr.allocDir.LogPath(tr.name, allocdir.Stderr)
	if err != nil {
		return nil, err
	}
	limits, disabled := logLimits(task.LogConfig)
	if disabled {
		stdout, stderr = "", "" // the driver discards the output
	}
	cfg := &drivers.TaskConfig{
		ID:         tr.taskID,
		AllocID:    alloc.ID,
		TaskName:   tr.name,
		TaskGroup:  alloc.TaskGroup,
		JobName:    alloc.Job.Name,
		Namespace:  alloc.Namespace,
		Config:     env.ReplaceConfig(config),
		Env:        env.Map(),
		User:       task.User,
		AllocDir:   tr.allocDir.SharedDir(),
		TaskDir:    td.Dir,
		PrivateDir: td.PrivateDir,
		StdoutPath: stdout,
		StderrPath: stderr,
		LogLimits:  limits,
		Network:    iso,
	}
	cfg.CPU, cfg.MemoryMB, cfg.MemoryMaxMB = taskResources(alloc, task)
	if cfg.Mounts, err = hostVolumeMounts(tr.node, alloc, task); err != nil {
		return nil, err
	}
	return cfg, nil
}

// buildEnv is the task's environment, for its config and its hooks.
func (tr *TaskRunner) buildEnv(alloc *structs.Allocation, task *structs.Task) *taskenv.Env {
	tr.mu.Lock()
	tmplEnv := tr.templateEnv
	tr.mu.Unlock()
	var iso *drivers.NetworkIsolation
	var netStatus *structs.AllocNetworkStatus
	if tr.network != nil {
		iso, netStatus = tr.network()
	}
	td := tr.allocDir.TaskDir(tr.name)
	return taskenv.Build(taskenv.Input{
		Alloc: alloc, Task: task, Node: tr.node,
		AllocDir: tr.allocDir.SharedDir(), TaskDir: td.Dir, LocalDir: td.LocalDir, SecretsDir: td.SecretsDir,
		HostEnv: tr.hostEnv, UnixAddr: tr.unixAddr, TemplateEnv: tmplEnv,
		AllocNetwork: allocNetwork(iso, netStatus),
	})
}

// hostVolumeMounts resolves the task's volume_mount blocks against the
// node's host volumes.
func hostVolumeMounts(node *structs.Node, alloc *structs.Allocation, task *structs.Task) ([]*drivers.MountConfig, error) {
	if len(task.VolumeMounts) == 0 {
		return nil, nil
	}
	var tg *structs.TaskGroup
	if alloc.Job != nil {
		tg = alloc.Job.LookupTaskGroup(alloc.TaskGroup)
	}
	if tg == nil {
		return nil, fmt.Errorf("volume_mount: the allocation's job has no group %q", alloc.TaskGroup)
	}
	mounts, err := structs.ResolveHostVolumeMounts(node, tg, task, alloc.Name)
	if err != nil {
		return nil, fmt.Errorf("volume_mount: %w", err)
	}
	out := make([]*drivers.MountConfig, len(mounts))
	for i, m := range mounts {
		out[i] = &drivers.MountConfig{HostPath: m.HostPath, TaskPath: m.Destination, ReadOnly: m.ReadOnly, PropagationMode: m.PropagationMode}
	}
	return out, nil
}

// Nomad's logs block defaults (api.Task.Canonicalize fills them in; a
// task stored without a logs block gets them here).
const (
	defaultLogMaxFiles      = 10
	defaultLogMaxFileSizeMB = 10
)

// logLimits returns the bounds of the task's log files and whether its
// logs are disabled (logs { disabled = true }: Nomad attaches the task's
// output to /dev/null and writes no files).
func logLimits(lc *structs.LogConfig) (limits logrotate.Limits, disabled bool) {
	if lc == nil {
		return logrotate.LimitsMB(defaultLogMaxFiles, defaultLogMaxFileSizeMB), false
	}
	return logrotate.LimitsMB(lc.MaxFiles, lc.MaxFileSizeMB), lc.Disabled
}

// taskResources returns the CPU, memory and memory_max granted to the task,
// falling back to what it asked for.
func taskResources(alloc *structs.Allocation, task *structs.Task) (cpu, memoryMB, memoryMaxMB int) {
	if task.Resources != nil {
		cpu, memoryMB, memoryMaxMB = task.Resources.CPU, task.Resources.MemoryMB, task.Resources.MemoryMaxMB
	}
	if alloc.AllocatedResources != nil {
		if r := alloc.AllocatedResources.Tasks[task.Name]; r != nil {
			cpu, memoryMB, memoryMaxMB = int(r.Cpu.CpuShares), int(r.Memory.MemoryMB), int(r.Memory.MemoryMaxMB)
		}
	}
	return cpu, memoryMB, memoryMaxMB
}

// allocNetwork is the network status the environment shows the task: the
// allocation's own (bridge mode), nil in the host's network.
func allocNetwork(iso *drivers.NetworkIsolation, ns *structs.AllocNetworkStatus) *structs.AllocNetworkStatus {
	if iso == nil {
		return nil
	}
	return ns
}
