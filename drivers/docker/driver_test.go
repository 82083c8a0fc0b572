package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/testutil/dockertest"
)

func TestFingerprint(t *testing.T) {
	e := newEnv(t)
	fp := e.d.Fingerprint(context.Background())
	require.True(t, fp.Detected, fp.HealthDescription)
	require.True(t, fp.Healthy, fp.HealthDescription)
	require.Equal(t, "1", fp.Attributes["driver.docker"])
	require.NotEmpty(t, fp.Attributes["driver.docker.version"])
	require.Equal(t, "linux", fp.Attributes["driver.docker.os"])

	d := New(nil)
	require.NoError(t, d.SetConfig(map[string]any{"endpoint": "unix:///nonexistent/docker.sock"}))
	fp = d.Fingerprint(context.Background())
	require.False(t, fp.Detected)
	require.False(t, fp.Healthy)
	require.True(t, strings.HasPrefix(fp.HealthDescription, "Docker daemon not reachable: "), fp.HealthDescription)
}

// progressLog records progress callbacks with their times.
type progressLog struct {
	mu    sync.Mutex
	at    []time.Time
	calls []drivers.PrepareProgress
}

func (p *progressLog) record(pp drivers.PrepareProgress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.at = append(p.at, time.Now())
	p.calls = append(p.calls, pp)
}

func TestPrepare(t *testing.T) {
	e := newEnv(t)
	ref, digest := e.push("web", "v1", "1", 6<<20)
	e.reg.SetBandwidth(4 << 20) // ~1.5s for the padding layer: several progress reports
	cfg, _ := e.taskConfig(ref, nil)

	var pl progressLog
	require.NoError(t, e.d.PrepareTask(context.Background(), cfg, pl.record))
	for i, c := range pl.calls {
		t.Logf("progress %s: %+v", pl.at[i].Format("15:04:05.000"), c)
	}
	require.GreaterOrEqual(t, len(pl.calls), 2, "progress reported during the pull: %+v", pl.calls)
	final := pl.calls[len(pl.calls)-1]
	require.Positive(t, final.BytesTotal)
	require.Equal(t, final.BytesTotal, final.BytesDone, final.Message)
	require.GreaterOrEqual(t, final.BytesTotal, int64(6<<20))
	require.Contains(t, final.Message, "Pulled image "+ref)
	for i := 1; i < len(pl.at)-1; i++ { // the final report is not throttled
		require.GreaterOrEqual(t, pl.at[i].Sub(pl.at[i-1]), progressEvery-10*time.Millisecond, "callbacks %d and %d", i-1, i)
	}
	for i := 1; i < len(pl.calls); i++ {
		require.GreaterOrEqual(t, pl.calls[i].BytesDone, pl.calls[i-1].BytesDone, "progress never goes back")
	}
	id, err := e.d.ImageID(context.Background(), ref)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(id, "sha256:"), id)
	e.reg.SetBandwidth(0)

	// Present: no registry traffic.
	manifests := func() int {
		return e.reg.ManifestHeads(ref) + e.reg.ManifestGets(ref) + e.reg.ManifestGets("web@"+digest)
	}
	before := manifests()
	require.Positive(t, before)
	pl = progressLog{}
	require.NoError(t, e.d.PrepareTask(context.Background(), cfg, pl.record))
	require.Equal(t, before, manifests(), "a present image is not pulled")
	require.Len(t, pl.calls, 1)
	require.Contains(t, pl.calls[0].Message, "present locally")

	// force_pull asks the registry again.
	cfg.Config["force_pull"] = true
	require.NoError(t, e.d.PrepareTask(context.Background(), cfg, nil))
	require.Greater(t, manifests(), before, "force_pull pulls again")

	// Pinned by digest: pulled by digest.
	pinned := ref[:strings.LastIndex(ref, ":")] + "@" + digest
	cfg.Config["image"] = pinned
	require.NoError(t, e.d.PrepareTask(context.Background(), cfg, nil))
	pid, err := e.d.ImageID(context.Background(), pinned)
	require.NoError(t, err)
	require.Equal(t, id, pid)

	// A tag that does not exist.
	bad := e.reg.Ref("web", "nope")
	cfg.Config["image"] = bad
	err = e.d.PrepareTask(context.Background(), cfg, nil)
	require.Error(t, err)
	require.Contains(t, err.Error(), fmt.Sprintf("failed to pull image %q: ", bad))
	require.Regexp(t, "manifest unknown|not found", err.Error())
	t.Logf("bad tag: %v", err)
	var pe *PullError
	require.ErrorAs(t, err, &pe)
	require.False(t, drivers.IsRecoverable(err), "a missing image does not come back by retrying")
}

func TestPrepareStalled(t *testing.T) {
	e := newEnv(t)
	ref, _ := e.push("web", "v1", "1", 1<<20)
	e.reg.Stall(true)
	t.Cleanup(func() { e.reg.Stall(false) })
	cfg, _ := e.taskConfig(ref, map[string]any{"pull_activity_timeout": "1s"})

	start := time.Now()
	err := e.d.PrepareTask(context.Background(), cfg, nil)
	require.Error(t, err)
	require.Contains(t, err.Error(), fmt.Sprintf("failed to pull image %q: no progress for 1s", ref))
	require.Less(t, time.Since(start), 15*time.Second)
	t.Logf("stalled: %v", err)
	require.True(t, drivers.IsRecoverable(err))

	cfg.Config["pull_activity_timeout"] = "1m"
	cfg.Config["image_pull_timeout"] = "1s"
	err = e.d.PrepareTask(context.Background(), cfg, nil)
	require.ErrorContains(t, err, fmt.Sprintf("failed to pull image %q: timed out after 1s", ref))

	// The caller's context ends the pull too.
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	cfg.Config["image_pull_timeout"] = "1m"
	err = e.d.PrepareTask(ctx, cfg, nil)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestStartStopLogs(t *testing.T) {
	e := newEnv(t)
	ref, _ := e.push("web", "v1", "1", 0)
	cfg, port := e.taskConfig(ref, nil)

	// No prepare (prefetch = false): StartTask pulls the missing image.
	h := e.start(cfg)
	require.Equal(t, Name, h.Driver)
	require.Equal(t, cfg.ID, h.TaskID)
	var st State
	require.NoError(t, json.Unmarshal(h.DriverState, &st))
	require.NotEmpty(t, st.ContainerID)
	require.True(t, strings.HasPrefix(st.ImageID, "sha256:"), st.ImageID)
	require.Equal(t, ref, st.Image)

	require.Equal(t, "version 1\n", get(t, port))
	eventuallyContains(t, cfg.StderrPath, "webserver: version 1 listening on :8080")
	require.FileExists(t, cfg.StdoutPath)

	ins, err := e.cli.ContainerInspect(context.Background(), st.ContainerID)
	require.NoError(t, err)
	require.Equal(t, "/"+containerName(cfg), ins.Name)
	require.Equal(t, cfg.AllocID, ins.Config.Labels[LabelAllocID])
	require.Equal(t, "web", ins.Config.Labels[LabelTaskName])
	require.Equal(t, "job", ins.Config.Labels[LabelJobName])
	require.Equal(t, "default", ins.Config.Labels[LabelNamespace])
	require.Equal(t, "1", ins.Config.Labels[dockertest.LabelKey])
	require.Contains(t, ins.Config.Env, "NOMAD_ALLOC_DIR=/alloc")
	require.Equal(t, int64(64<<20), ins.HostConfig.Memory)
	targets := map[string]string{}
	for _, m := range ins.Mounts {
		targets[m.Destination] = m.Source
	}
	require.Equal(t, cfg.AllocDir, targets["/alloc"])
	require.Contains(t, targets, "/local")
	require.Contains(t, targets, "/secrets")

	status, err := e.d.InspectTask(cfg.ID)
	require.NoError(t, err)
	require.Equal(t, drivers.TaskStateRunning, status.State)
	require.Equal(t, st.ContainerID, status.Attributes["container_id"])

	_, err = e.d.StartTask(cfg)
	require.ErrorIs(t, err, drivers.ErrTaskExists)
	require.Error(t, e.d.DestroyTask(cfg.ID, false), "running task needs force")

	// SIGTERM: the server shuts down gracefully.
	start := time.Now()
	require.NoError(t, e.d.StopTask(cfg.ID, 10*time.Second, ""))
	require.Less(t, time.Since(start), 8*time.Second)
	res := e.wait(cfg.ID)
	require.Equal(t, 0, res.ExitCode, res.String())
	require.True(t, res.Successful(), res.String())
	logs := eventuallyContains(t, cfg.StderrPath, "signal received, shutting down")
	require.Equal(t, 1, strings.Count(logs, "listening on"), logs)
	status, err = e.d.InspectTask(cfg.ID)
	require.NoError(t, err)
	require.Equal(t, drivers.TaskStateExited, status.State)

	require.NoError(t, e.d.DestroyTask(cfg.ID, false))
	_, err = e.cli.ContainerInspect(context.Background(), st.ContainerID)
	require.True(t, client.IsErrNotFound(err), "container removed: %v", err)
	_, err = e.d.InspectTask(cfg.ID)
	require.ErrorIs(t, err, drivers.ErrTaskNotFound)

	// The task can start again (a restart) with the same name.
	e.start(cfg)
	require.Equal(t, "version 1\n", get(t, port))
	require.NoError(t, e.d.StopTask(cfg.ID, 10*time.Second, "SIGINT"))
	require.Equal(t, 0, e.wait(cfg.ID).ExitCode)
}

func TestStopEscalatesToKill(t *testing.T) {
	e := newEnv(t)
	ref, _ := e.push("web", "v1", "1", 0)
	require.NoError(t, e.d.PrepareTask(context.Background(), &drivers.TaskConfig{Config: map[string]any{"image": ref}}, nil))
	cfg, port := e.taskConfig(ref, nil)
	e.start(cfg)
	get(t, port)

	// The server ignores SIGUSR1: StopTask kills it after the timeout.
	start := time.Now()
	require.NoError(t, e.d.StopTask(cfg.ID, time.Second, "SIGUSR1"))
	require.GreaterOrEqual(t, time.Since(start), time.Second)
	res := e.wait(cfg.ID)
	require.Equal(t, 137, res.ExitCode, res.String())
	require.Equal(t, 9, res.Signal, res.String())
	require.False(t, res.Successful())
	require.NoError(t, e.d.StopTask(cfg.ID, time.Second, ""), "stopping an exited task is a no-op")
	require.Error(t, e.d.SignalTask(cfg.ID, "SIGHUP"), "cannot signal an exited task")
}

func TestExitCodeAndStartErrors(t *testing.T) {
	e := newEnv(t)
	ref, _ := e.push("web", "v1", "1", 0)

	// A bad $PORT makes the server exit 1 at once.
	cfg, _ := e.taskConfig(ref, nil)
	cfg.Env["PORT"] = "notaport"
	e.start(cfg)
	res := e.wait(cfg.ID)
	require.Equal(t, 1, res.ExitCode, res.String())
	require.Zero(t, res.Signal)
	require.False(t, res.OOMKilled)
	eventuallyContains(t, cfg.StderrPath, "webserver:")
	// The driver's log position is in the task's private dir; the task
	// dir (the task's and `alloc fs`'s) holds no file of Drover's.
	require.FileExists(t, cfg.PrivateDir+"/"+logPosFile)
	entries, err := os.ReadDir(cfg.TaskDir)
	require.NoError(t, err)
	for _, ent := range entries {
		require.NotContains(t, ent.Name(), "drover", "a Drover file in the task dir")
	}

	// A client that lost track of the task starts it again: the left-over
	// container of the same task is replaced.
	e.d.mu.Lock()
	delete(e.d.tasks, cfg.ID)
	e.d.mu.Unlock()
	e.start(cfg)
	require.Equal(t, 1, e.wait(cfg.ID).ExitCode)

	// An entrypoint that does not exist: StartTask fails, no container left.
	cfg2, _ := e.taskConfig(ref, map[string]any{"entrypoint": []any{"/nope"}})
	_, err = e.d.StartTask(cfg2)
	require.Error(t, err)
	require.Contains(t, err.Error(), "/nope")
	t.Logf("missing entrypoint: %v", err)
	require.False(t, drivers.IsRecoverable(err))
	_, err = e.cli.ContainerInspect(context.Background(), containerName(cfg2))
	require.True(t, client.IsErrNotFound(err), "failed container removed: %v", err)
	_, err = e.d.InspectTask(cfg2.ID)
	require.ErrorIs(t, err, drivers.ErrTaskNotFound)

	// A port label the group does not have.
	cfg3, _ := e.taskConfig(ref, map[string]any{"ports": []any{"admin"}})
	_, err = e.d.StartTask(cfg3)
	require.ErrorContains(t, err, `ports names port "admin"`)
}

func TestRecoverTask(t *testing.T) {
	e := newEnv(t)
	ref, _ := e.push("web", "v1", "1", 0)
	cfg, port := e.taskConfig(ref, nil)
	h := e.start(cfg)
	get(t, port)
	eventuallyContains(t, cfg.StderrPath, "listening on")

	// The client "restarts": the old driver's goroutines stop, the container
	// keeps running, a new driver recovers it from the persisted handle.
	old := e.d
	ot, err := old.get(cfg.ID)
	require.NoError(t, err)
	ot.cancel()
	ot.logs.stop()
	old.mu.Lock()
	delete(old.tasks, cfg.ID)
	old.mu.Unlock()

	d2 := New(old.logger.Named("restarted"))
	require.NoError(t, d2.RecoverTask(h))
	require.NoError(t, d2.RecoverTask(h), "recovering twice is a no-op")
	status, err := d2.InspectTask(cfg.ID)
	require.NoError(t, err)
	require.Equal(t, drivers.TaskStateRunning, status.State)
	require.Equal(t, "version 1\n", get(t, port))

	require.NoError(t, d2.StopTask(cfg.ID, 10*time.Second, ""))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch, err := d2.WaitTask(ctx, cfg.ID)
	require.NoError(t, err)
	res := <-ch
	require.NotNil(t, res)
	require.Equal(t, 0, res.ExitCode, res.String())
	logs := eventuallyContains(t, cfg.StderrPath, "signal received")
	require.Equal(t, 1, strings.Count(logs, "listening on"), "no line copied twice:\n%s", logs)
	require.Equal(t, 1, strings.Count(logs, "signal received"), logs)

	// An exited container is recovered as exited, with its exit code.
	d3 := New(nil)
	require.NoError(t, d3.RecoverTask(h))
	ch, err = d3.WaitTask(ctx, cfg.ID)
	require.NoError(t, err)
	require.Equal(t, 0, (<-ch).ExitCode)
	require.NoError(t, d3.DestroyTask(cfg.ID, false))

	// Gone: ErrTaskNotFound.
	require.ErrorIs(t, New(nil).RecoverTask(h), drivers.ErrTaskNotFound)
}

func TestImageHelpers(t *testing.T) {
	e := newEnv(t)
	ref, _ := e.push("web", "v1", "1", 64<<10) // unique padding: an image of its own
	cfg, port := e.taskConfig(ref, nil)
	e.start(cfg)
	get(t, port)
	h, err := e.d.InspectTask(cfg.ID)
	require.NoError(t, err)
	id := h.Attributes["image_id"]
	got, err := e.d.ImageID(context.Background(), ref)
	require.NoError(t, err)
	require.Equal(t, id, got)

	err = e.d.RemoveImage(context.Background(), id)
	require.ErrorIs(t, err, ErrImageInUse)
	var iu *ImageInUseError
	require.ErrorAs(t, err, &iu)
	require.Equal(t, id, iu.ImageID)
	var conflict interface{ Conflict() }
	require.ErrorAs(t, err, &conflict, "errdefs convention: a conflict")

	require.NoError(t, e.d.StopTask(cfg.ID, 10*time.Second, ""))
	e.wait(cfg.ID)
	require.ErrorIs(t, e.d.RemoveImage(context.Background(), id), ErrImageInUse, "a stopped container still holds it")
	require.NoError(t, e.d.DestroyTask(cfg.ID, false))

	require.NoError(t, e.d.RemoveImage(context.Background(), id))
	_, err = e.d.ImageID(context.Background(), ref)
	require.ErrorIs(t, err, ErrImageNotFound)
	require.NoError(t, e.d.RemoveImage(context.Background(), id), "already gone")
}

func TestMain(m *testing.M) {
	code := m.Run()
	// Sweep containers this package's tests may have left (labelled).
	if cli, err := dockertest.New(context.Background()); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cs, _ := cli.ContainerList(ctx, container.ListOptions{All: true})
		for _, c := range cs {
			if c.Labels[dockertest.LabelKey] == dockertest.LabelValue && strings.HasPrefix(c.Labels[LabelAllocID], "test") {
				_ = cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
			}
		}
		cancel()
		cli.Close()
	}
	os.Exit(code)
}

func TestContainerRemovedBehindOurBack(t *testing.T) {
	e := newEnv(t)
	ref, _ := e.push("web", "v1", "1", 0)
	cfg, port := e.taskConfig(ref, nil)
	h := e.start(cfg)
	get(t, port)
	var st State
	require.NoError(t, json.Unmarshal(h.DriverState, &st))

	require.NoError(t, e.cli.ContainerRemove(context.Background(), st.ContainerID, container.RemoveOptions{Force: true}))
	start := time.Now()
	res := e.wait(cfg.ID)
	require.False(t, res.Successful(), res.String())
	require.Less(t, time.Since(start), 4*time.Second, "the exit is seen at once, the log stream does not hold it")
	require.NoError(t, e.d.DestroyTask(cfg.ID, false), "a gone container is destroyed without fuss")
}
