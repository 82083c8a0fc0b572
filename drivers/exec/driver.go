package exec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/drivers/rawexec"
	"github.com/drover-project/drover/helper/pathguard"
)

// Name is the driver name used in job specs.
const Name = "exec"

// wrapperName is the rawexec wrapper that isolates exec tasks.
const wrapperName = "exec"

// isoSpec is the wrapper's spec: how to isolate one task.
type isoSpec struct {
	Root     string // the task dir, the task's "/"
	Binds    []bind
	PIDNS    bool
	IPCNS    bool
	Hostname string
	Cgroup   *cgroupSpec `json:",omitempty"`
}

func init() {
	drivers.Register(Name, func(l hclog.Logger) drivers.Driver { return New(l) })
}

// Driver is the exec driver. Waiting, stopping, signalling, inspecting and
// recovering tasks are the raw_exec driver's (an executor supervises each
// task); starting puts the task in its namespaces, root and cgroup.
type Driver struct {
	*rawexec.Driver
	logger hclog.Logger

	mu     sync.Mutex
	config pluginConfig

	// host is what the fingerprint found, computed once.
	hostOnce sync.Once
	host     hostSupport
}

// hostSupport is whether this host can run exec tasks, and with cgroups.
type hostSupport struct {
	err       error // why exec tasks cannot run here; nil if they can
	cgroupErr error // why tasks get no cgroup; nil if they do
}

var _ drivers.Driver = (*Driver)(nil)

// New returns an exec driver with the default chroot_env.
func New(logger hclog.Logger) *Driver {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Driver{Driver: rawexec.NewIsolated(logger, Name), logger: logger, config: defaultPluginConfig()}
}

// Name returns "exec".
func (d *Driver) Name() string { return Name }

// SetConfig applies plugin "exec" { config {...} }: chroot_env (host path =
// task path), default_pid_mode and default_ipc_mode ("private" or "host");
// no_cgroups is accepted and ignored.
func (d *Driver) SetConfig(plugin map[string]any) error {
	pc, err := parsePluginConfig(plugin)
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.config = pc
	d.mu.Unlock()
	return nil
}

func (d *Driver) pluginConfig() pluginConfig {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.config
}

func (d *Driver) support() hostSupport {
	d.hostOnce.Do(func() { d.host = detectHost() })
	return d.host
}

// Fingerprint reports the driver detected and healthy only where it can
// isolate tasks: on Linux, as root, with the namespaces it needs. Elsewhere
// it is not detected, with the reason, so that jobs using it are not placed
// on this node.
func (d *Driver) Fingerprint(context.Context) *drivers.Fingerprint {
	hs := d.support()
	if hs.err != nil {
		return &drivers.Fingerprint{Detected: false, Healthy: false, HealthDescription: hs.err.Error(), Attributes: map[string]string{}}
	}
	attrs := map[string]string{"driver.exec": "1", "driver.exec.cgroup_v2": "true"}
	desc := "Healthy"
	if hs.cgroupErr != nil {
		attrs["driver.exec.cgroup_v2"] = "false"
		desc = "Healthy (no resource limits: " + hs.cgroupErr.Error() + ")"
	}
	return &drivers.Fingerprint{Detected: true, Healthy: true, HealthDescription: desc, Attributes: attrs}
}

// ValidateTaskConfig checks command (required), args, pid_mode and
// ipc_mode.
func (d *Driver) ValidateTaskConfig(config map[string]any) error {
	_, err := parseTaskConfig(config)
	return err
}

// StartTask starts the task isolated and returns once it runs.
func (d *Driver) StartTask(cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	if cfg == nil || cfg.ID == "" {
		return nil, errors.New("exec: task config with an ID is required")
	}
	if hs := d.support(); hs.err != nil {
		return nil, fmt.Errorf("exec: %w", hs.err)
	}
	tc, err := parseTaskConfig(cfg.Config)
	if err != nil {
		return nil, fmt.Errorf("invalid exec config: %w", err)
	}
	if cfg.TaskDir == "" {
		return nil, errors.New("exec: task dir is required")
	}
	pc := d.pluginConfig()
	view := newRootView(cfg, pc.ChrootEnv)
	if err := view.addVolumes(cfg.Mounts); err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	path, err := view.resolveCommand(tc.Command)
	if err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	user := cfg.User
	if user == "" {
		user = defaultUser
	}
	uid, gid, groups, err := rawexec.LookupUser(user)
	if err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	if err := prepareTaskDirs(cfg.TaskDir, uid, gid); err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	args := make([]string, 0, len(tc.Args)+1)
	args = append(args, tc.Command)
	for _, a := range tc.Args {
		args = append(args, view.taskPath(a))
	}
	spec := isoSpec{
		Root:  cfg.TaskDir,
		Binds: view.binds,
		PIDNS: orDefault(tc.PIDMode, pc.DefaultPIDMode) == modePrivate,
		IPCNS: orDefault(tc.IPCMode, pc.DefaultIPCMode) == modePrivate,
	}
	spec.Hostname, _ = os.Hostname()
	applyGroupNetwork(&spec, cfg.Network)
	if d.support().cgroupErr == nil {
		spec.Cgroup = newCgroupSpec(cgroupName(cfg.ID), cfg.MemoryMB, cfg.MemoryMaxMB, cfg.CPU)
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	return d.StartIsolated(cfg, rawexec.Isolated{
		Path: path, Args: args, Dir: "/", Env: view.taskEnv(cfg.Env),
		UID: uid, GID: gid, Groups: groups,
		Wrapper: wrapperName, Spec: raw,
	})
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// cgroupName turns a task ID ("<alloc>/<task>") into a cgroup dir name.
func cgroupName(taskID string) string {
	return strings.NewReplacer("/", ".", " ", "_").Replace(taskID)
}

// prepareTaskDirs makes sure local/, secrets/ and tmp/ exist in the task dir
// and that local/ and secrets/ belong to the task's user, who may not be
// root. An earlier run of the task may have replaced one with a symlink:
// each must stay inside the task dir after symlinks, or the start fails
// naming it, before anything is created, chowned or chmodded on the host.
func prepareTaskDirs(taskDir string, uid, gid *uint32) error {
	if err := os.MkdirAll(taskDir, 0o755); err != nil { // the client's own path
		return err
	}
	for _, d := range []struct {
		name  string
		mode  os.FileMode
		chown bool
	}{{"local", 0o755, true}, {"secrets", 0o700, true}, {"tmp", os.ModeSticky | 0o777, false}} {
		p, err := inTaskDir(taskDir, filepath.Join(taskDir, d.name))
		if err != nil {
			return err
		}
		if err := os.MkdirAll(p, 0o755); err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("task dir path %s is not a directory", p)
		}
		if d.name == "tmp" {
			if err := os.Chmod(p, d.mode); err != nil {
				return err
			}
		}
		if d.chown && uid != nil && gid != nil {
			if err := os.Lchown(p, int(*uid), int(*gid)); err != nil {
				return fmt.Errorf("giving %s to the task's user: %w", d.name, err)
			}
		}
	}
	return nil
}

// inTaskDir returns p resolved after symlinks when it stays inside the task
// dir, and otherwise an error naming p and where it leads (the task event
// shows it).
func inTaskDir(taskDir, p string) (string, error) {
	resolved, err := pathguard.Within(taskDir, p)
	if errors.Is(err, pathguard.ErrOutside) {
		return "", fmt.Errorf("refusing a path that leaves the task directory: %w", err)
	}
	if err != nil {
		return "", err
	}
	return resolved, nil
}
