package docker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/drivers"
)

// Name is the driver name used in job specs.
const Name = "docker"

// Timeouts of daemon calls; variables so tests may shorten them.
var (
	fingerprintTimeout = 5 * time.Second // the calls of Fingerprint
	startTimeout       = 2 * time.Minute // creating and starting a container (the pull aside)
)

func init() {
	drivers.Register(Name, func(l hclog.Logger) drivers.Driver { return New(l) })
}

// State is the driver state persisted in TaskHandle.DriverState (JSON).
// ImageID is the ID of the image the container runs, for the client's image
// leases.
type State struct {
	ContainerID string
	ImageID     string
	Image       string // the image as written in the task config
}

// Driver is the docker driver. Create it with New.
type Driver struct {
	logger hclog.Logger

	mu          sync.Mutex
	cfg         pluginConfig
	cli         *client.Client
	cliEndpoint string
	tasks       map[string]*task
	pauseMu     sync.Mutex // serializes the pause image's import (network.go)
}

var (
	_ drivers.Driver   = (*Driver)(nil)
	_ drivers.Preparer = (*Driver)(nil)
)

// New returns an enabled docker driver talking to the daemon named by the
// environment (DOCKER_HOST, ...) or the default socket.
func New(logger hclog.Logger) *Driver {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Driver{logger: logger, cfg: defaultPluginConfig(), tasks: map[string]*task{}}
}

// Name returns "docker".
func (d *Driver) Name() string { return Name }

// SetConfig applies plugin "docker" { config {...} }: enabled, endpoint,
// image_delay, gc { image, image_delay, container }, auth { config },
// image_pull_timeout and pull_activity_timeout (defaults for tasks), and
// the security options (volumes, allow_privileged, allow_caps,
// allowed_modes, allow_runtimes, allow_devices; see the package doc). A
// rejected config changes nothing.
func (d *Driver) SetConfig(plugin map[string]any) error {
	pc, err := parsePluginConfig(plugin)
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.cfg = pc
	d.mu.Unlock()
	return nil
}

func (d *Driver) config() pluginConfig {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cfg
}

// ImageDelay is how long an image no task uses is kept before the client's
// image GC may remove it (plugin config image_delay, default 3m).
func (d *Driver) ImageDelay() time.Duration { return d.config().ImageDelay }

// ImageGCEnabled reports whether the client may remove unused images
// (plugin config gc { image = true }, the default).
func (d *Driver) ImageGCEnabled() bool { return d.config().ImageGC }

// client returns the docker client, created on first use (and again when
// the endpoint changed).
func (d *Driver) client() (*client.Client, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cli != nil && d.cliEndpoint == d.cfg.Endpoint {
		return d.cli, nil
	}
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if d.cfg.Endpoint != "" {
		opts = append(opts, client.WithHost(d.cfg.Endpoint))
	}
	cli, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	if d.cli != nil {
		_ = d.cli.Close()
	}
	d.cli, d.cliEndpoint = cli, d.cfg.Endpoint
	return cli, nil
}

// Fingerprint pings the daemon: detected and healthy when it answers, with
// driver.docker, driver.docker.version and driver.docker.os attributes.
func (d *Driver) Fingerprint(ctx context.Context) *drivers.Fingerprint {
	if !d.config().Enabled {
		return &drivers.Fingerprint{Detected: true, HealthDescription: "disabled", Attributes: map[string]string{}}
	}
	unreachable := func(err error) *drivers.Fingerprint {
		return &drivers.Fingerprint{HealthDescription: "Docker daemon not reachable: " + err.Error(), Attributes: map[string]string{}}
	}
	cli, err := d.client()
	if err != nil {
		return unreachable(err)
	}
	ctx, cancel := context.WithTimeout(ctx, fingerprintTimeout)
	defer cancel()
	if _, err := cli.Ping(ctx); err != nil {
		return unreachable(err)
	}
	v, err := cli.ServerVersion(ctx)
	if err != nil {
		return unreachable(err)
	}
	return &drivers.Fingerprint{
		Detected:          true,
		Healthy:           true,
		HealthDescription: "Healthy",
		Attributes: map[string]string{
			"driver.docker":             "1",
			"driver.docker.version":     v.Version,
			"driver.docker.os":          v.Os,
			"driver.docker.api_version": cli.ClientVersion(),
		},
	}
}

// ValidateTaskConfig checks a docker config block.
func (d *Driver) ValidateTaskConfig(config map[string]any) error {
	_, err := parseTaskConfig(config, d.config())
	return err
}

// ReachesTaskAPI: the task API socket is in the task's secrets dir, which
// every container has at /secrets (drivers.TaskAPIReacher).
func (d *Driver) ReachesTaskAPI() bool { return true }

// ValidateTaskResources refuses at submission a memory_hard_limit below
// the task's memory, which the task's start would refuse
// (drivers.ResourceValidator).
func (d *Driver) ValidateTaskResources(config map[string]any, memoryMB, memoryMaxMB int) error {
	tc, err := parseTaskConfig(config, d.config())
	if err != nil || tc.Keys.MemoryHardLimitMB <= 0 {
		return nil // a config error is ValidateTaskConfig's to report
	}
	_, _, err = memoryLimits(memoryMB, memoryMaxMB, tc.Keys.MemoryHardLimitMB)
	return err
}

// PrepareTask pulls the task's image (by digest when pinned) unless it is
// present locally and force_pull is off, reporting the download progress.
func (d *Driver) PrepareTask(ctx context.Context, cfg *drivers.TaskConfig, progress func(drivers.PrepareProgress)) error {
	if cfg == nil {
		return errors.New("docker: task config is required")
	}
	pc := d.config()
	if !pc.Enabled {
		return fmt.Errorf("%w: docker", drivers.ErrDisabled)
	}
	tc, err := parseTaskConfig(cfg.Config, pc)
	if err != nil {
		return fmt.Errorf("invalid docker config: %w", err)
	}
	// The security options are checked before anything is pulled. The
	// pull ahead of a wave has no task directories: its binds are checked
	// by the task's own prepare and start.
	refused := checkPolicy(tc, pc.Security)
	if cfg.AllocDir != "" || cfg.TaskDir != "" {
		refused = errors.Join(refused, checkBinds(cfg, tc, pc.Security))
	}
	if tc.Keys.Load != "" && cfg.TaskDir != "" {
		if _, err := loadPath(cfg, tc); err != nil {
			refused = errors.Join(refused, err)
		}
	}
	if refused != nil {
		return drivers.NewRecoverableError(refused, false)
	}
	if tc.Keys.Load != "" {
		// Nothing to pull: the tarball is loaded at start, once the
		// task's prestart tasks may have put it in place.
		return nil
	}
	_, err = d.ensureImage(ctx, tc, tc.ForcePull, progress)
	return err
}

// ensureImage makes the task's image present, pulling it when missing or
// when force is set, and returns its ID.
func (d *Driver) ensureImage(ctx context.Context, tc *taskConfig, force bool, progress func(drivers.PrepareProgress)) (string, error) {
	ref, err := pullRef(tc.Image)
	if err != nil {
		return "", &PullError{Image: tc.Image, Err: err}
	}
	if !force {
		id, err := d.ImageID(ctx, ref)
		switch {
		case err == nil:
			if progress != nil {
				progress(drivers.PrepareProgress{Message: fmt.Sprintf("Image %s is present locally", tc.Image)})
			}
			return id, nil
		case !errors.Is(err, ErrImageNotFound):
			return "", drivers.NewRecoverableError(fmt.Errorf("inspecting image %q: %w", tc.Image, err), true)
		}
	}
	auth, err := registryAuth(tc.Image, tc.Auth, d.config().AuthConfigPath)
	if err != nil {
		if !tc.Keys.AuthSoftFail {
			return "", &PullError{Image: tc.Image, Err: err}
		}
		// auth_soft_fail: credentials that cannot be found are no
		// reason to fail; try the registry anonymously.
		d.logger.Warn("no registry credentials for the image; pulling anonymously (auth_soft_fail)", "image", tc.Image, "error", err)
		auth = ""
	}
	err = d.pull(ctx, pullOptions{
		Image: tc.Image, Auth: auth, Timeout: tc.ImagePullTimeout,
		ActivityTimeout: tc.PullActivityTimeout, Progress: progress,
	})
	if err != nil {
		return "", drivers.NewRecoverableError(err, pullRecoverable(err))
	}
	id, err := d.ImageID(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("inspecting pulled image %q: %w", tc.Image, err)
	}
	return id, nil
}

// pullRecoverable reports whether a failed pull may succeed when retried:
// not for a missing image or refused credentials.
func pullRecoverable(err error) bool {
	return !cerrdefs.IsNotFound(err) && !cerrdefs.IsUnauthorized(err) && !cerrdefs.IsPermissionDenied(err)
}

// StartTask makes the image present, then creates and starts the task's
// container "<task>-<alloc>" and follows its logs.
func (d *Driver) StartTask(cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	if cfg == nil || cfg.ID == "" {
		return nil, errors.New("docker: task config with an ID is required")
	}
	pc := d.config()
	if !pc.Enabled {
		return nil, fmt.Errorf("%w: docker", drivers.ErrDisabled)
	}
	tc, err := parseTaskConfig(cfg.Config, pc)
	if err != nil {
		return nil, fmt.Errorf("invalid docker config: %w", err)
	}
	d.mu.Lock()
	if _, ok := d.tasks[cfg.ID]; ok {
		d.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", drivers.ErrTaskExists, cfg.ID)
	}
	d.tasks[cfg.ID] = nil // reserve the ID while starting; get ignores it
	d.mu.Unlock()

	t, err := d.startContainer(cfg.Copy(), tc, pc.Security)
	d.mu.Lock()
	if err != nil {
		delete(d.tasks, cfg.ID)
	} else {
		d.tasks[cfg.ID] = t
	}
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	d.logger.Debug("task started", "task", cfg.ID, "container", t.state.ContainerID)
	return t.handle()
}

func (d *Driver) startContainer(cfg *drivers.TaskConfig, tc *taskConfig, so securityOptions) (*task, error) {
	cli, err := d.client()
	if err != nil {
		return nil, err
	}
	// The spec (with the security options' verdict and the bind sources
	// resolved now, at every start) comes before any pull.
	ref, _ := pullRef(tc.Image)
	if tc.Keys.Load != "" {
		ref, _ = loadRef(tc.Image)
	}
	cc, hc, err := containerSpec(cfg, tc, so, ref)
	if err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	if tc.Keys.Load != "" {
		if _, err := d.loadImage(context.Background(), cfg, tc); err != nil {
			return nil, err
		}
	} else if _, err := d.ensureImage(context.Background(), tc, false, nil); err != nil {
		// The pull runs here only when prepare did not (prefetch = false,
		// or a task restarting after its image was removed); it has its
		// own timeouts.
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	name := containerName(cfg)
	created, err := cli.ContainerCreate(ctx, cc, hc, nil, nil, name)
	if cerrdefs.IsConflict(err) {
		// A container of an earlier run of this task was left behind.
		if rerr := d.removeStale(ctx, name, cfg); rerr != nil {
			return nil, rerr
		}
		created, err = cli.ContainerCreate(ctx, cc, hc, nil, nil, name)
	}
	if err != nil {
		return nil, daemonError(fmt.Errorf("docker: creating container %s: %w", name, cleanDaemonError(err)))
	}
	for _, w := range created.Warnings {
		d.logger.Warn("container created with a warning", "container", name, "warning", w)
	}
	if err := cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		_ = cli.ContainerRemove(ctx, created.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		return nil, daemonError(fmt.Errorf("docker: starting container %s: %w", name, cleanDaemonError(err)))
	}
	ins, err := cli.ContainerInspect(ctx, created.ID)
	if err != nil {
		_ = cli.ContainerRemove(ctx, created.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		return nil, daemonError(fmt.Errorf("docker: inspecting container %s: %w", name, cleanDaemonError(err)))
	}
	st := State{ContainerID: created.ID, ImageID: ins.Image, Image: tc.Image}
	t := newTask(cfg, st, parseDockerTime(ins.State.StartedAt))
	t.tty = tc.Keys.TTY
	d.attach(cli, t, time.Time{})
	return t, nil
}

// removeStale removes a left-over container of the same task (same alloc
// and task labels); a container of anything else is not touched.
func (d *Driver) removeStale(ctx context.Context, name string, cfg *drivers.TaskConfig) error {
	cli, err := d.client()
	if err != nil {
		return err
	}
	ins, err := cli.ContainerInspect(ctx, name)
	if err != nil {
		return daemonError(fmt.Errorf("docker: inspecting existing container %s: %w", name, cleanDaemonError(err)))
	}
	if ins.Config == nil || ins.Config.Labels[LabelAllocID] != cfg.AllocID || ins.Config.Labels[LabelTaskName] != cfg.TaskName {
		return fmt.Errorf("docker: a container named %s exists and does not belong to this task", name)
	}
	d.logger.Info("removing a left-over container of the task", "container", name, "id", ins.ID)
	if err := cli.ContainerRemove(ctx, ins.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
		return daemonError(fmt.Errorf("docker: removing left-over container %s: %w", name, cleanDaemonError(err)))
	}
	return nil
}

// daemonError marks err recoverable when the daemon was unreachable or
// failed internally.
func daemonError(err error) error {
	recoverable := client.IsErrConnectionFailed(err) || cerrdefs.IsUnavailable(err) || errors.Is(err, context.DeadlineExceeded)
	return drivers.NewRecoverableError(err, recoverable)
}

// parseDockerTime parses the daemon's RFC 3339 times; zero when unset.
func parseDockerTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() <= 1 {
		return time.Time{}
	}
	return t
}

func (d *Driver) get(taskID string) (*task, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.tasks[taskID]
	if t == nil {
		return nil, fmt.Errorf("%w: %s", drivers.ErrTaskNotFound, taskID)
	}
	return t, nil
}
