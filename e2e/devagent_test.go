package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	dockerclient "github.com/docker/docker/client"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/testutil/images"
	"github.com/drover-project/drover/testutil/registry"
	"github.com/drover-project/drover/testutil/taskprocs"
)

// devAgentProc is a `drover agent -dev` process whose TMPDIR (where it
// makes its temporary data directory) is a directory of the test's.
type devAgentProc struct {
	tmp     string
	httpURL string
	cmd     *exec.Cmd
	exited  chan struct{}
	logPath string
}

// startDevAgent starts `drover agent -dev` on free ports with TMPDIR set
// to a directory of the test's, and waits for its node to be ready. What
// its tasks leave under that directory is killed when the test ends.
func startDevAgent(t *testing.T) *devAgentProc {
	t.Helper()
	dir := t.TempDir()
	p := &devAgentProc{tmp: filepath.Join(dir, "tmp"), logPath: filepath.Join(dir, "agent.log")}
	require.NoError(t, os.Mkdir(p.tmp, 0o700))
	httpPort, rpcPort := freePort(t), freePort(t)
	cfgPath := filepath.Join(dir, "agent.hcl")
	require.NoError(t, os.WriteFile(cfgPath, []byte(fmt.Sprintf("log_level = \"DEBUG\"\nports {\n  http = %d\n  rpc = %d\n}\n", httpPort, rpcPort)), 0o600))
	p.httpURL = fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	logf, err := os.Create(p.logPath)
	require.NoError(t, err)
	taskprocs.Cleanup(t, p.tmp) // runs after the kill below
	p.cmd = exec.Command(droverBin, "agent", "-dev", "-config", cfgPath)
	p.cmd.Env = append(os.Environ(), "TMPDIR="+p.tmp)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	require.NoError(t, p.cmd.Start())
	p.exited = make(chan struct{})
	go func() { _ = p.cmd.Wait(); _ = logf.Close(); close(p.exited) }()
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); <-p.exited })
	waitReadyNodes(t, p.api(t), 1)
	return p
}

func (p *devAgentProc) api(t *testing.T) *api.Client {
	c, err := api.NewClient(&api.Config{Address: p.httpURL})
	require.NoError(t, err)
	return c
}

func (p *devAgentProc) logs() string { b, _ := os.ReadFile(p.logPath); return string(b) }

// stop sends sig and waits for the agent to exit with 0, bounded.
func (p *devAgentProc) stop(t *testing.T, sig syscall.Signal, bound time.Duration) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig))
	select {
	case <-p.exited:
	case <-time.After(bound):
		t.Fatalf("dev agent did not exit within %v of %v\n%s", bound, sig, p.logs())
	}
	require.True(t, p.cmd.ProcessState.Success(), "exit %v\n%s", p.cmd.ProcessState, p.logs())
}

// requireCleanExit checks what a dev agent leaves once it exited: no
// temporary data directory, and a log that says it stopped its allocations.
func (p *devAgentProc) requireCleanExit(t *testing.T) {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(p.tmp, "drover-dev-*"))
	require.Empty(t, dirs, "the temporary data directory is removed")
	logs := p.logs()
	require.True(t, strings.Contains(logs, "stopping allocations before exit") && strings.Contains(logs, "stopped allocations before exit"),
		"the agent logs the stop of its allocations:\n%s", lastLines(logs, 15))
}

// TestDevAgentSIGTERMStopsRawExecTasks: `drover agent -dev` stopped with
// SIGTERM stops its raw_exec task and the task's executor before it exits
// and removes its temporary data directory; no process of them is left
// (before, both kept running with nothing left to reattach or stop them).
func TestDevAgentSIGTERMStopsRawExecTasks(t *testing.T) {
	p := startDevAgent(t)
	job := api.NewServiceJob("no-leftovers-sleep", "no-leftovers-sleep", "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("sleep", "raw_exec").SetConfig("command", "/bin/sleep").SetConfig("args", []string{"3600"})
	task.Resources = &api.Resources{CPU: new(50), MemoryMB: new(32)}
	job.AddTaskGroup(api.NewTaskGroup("g", 1).AddTask(task))
	_, _, err := p.api(t).Jobs().Register(job, nil)
	require.NoError(t, err)
	runningAllocOf(t, p.api(t), *job.ID)
	var procs []taskprocs.Process
	require.Eventually(t, func() bool { procs = taskprocs.Find(p.tmp); return len(procs) == 2 }, 10*time.Second, 20*time.Millisecond,
		"the executor and /bin/sleep: %v", &procs)
	require.True(t, procs[0].Executor)
	require.Equal(t, "/bin/sleep 3600", procs[1].Cmdline)

	p.stop(t, syscall.SIGTERM, 30*time.Second)
	require.Empty(t, taskprocs.Find(p.tmp), "nothing of the dev agent's task is left")
	for _, proc := range procs {
		require.False(t, taskprocs.Alive(proc.PID), "%v is gone", proc)
	}
	p.requireCleanExit(t)
}

// TestDevAgentCtrlCRemovesDockerContainers: the same with a Docker task
// and SIGINT (Ctrl-C): its container is stopped and removed.
func TestDevAgentCtrlCRemovesDockerContainers(t *testing.T) {
	requireDocker(t)
	reg := registry.Start(t, registry.Options{})
	img, err := images.Build(images.BuildOptions{Version: "1", Seed: time.Now().UnixNano()})
	require.NoError(t, err)
	ref := reg.Ref("no-leftovers/web", "v1")
	digest, err := images.Push(img, ref)
	require.NoError(t, err)
	t.Cleanup(func() { removeImages(t, []string{ref, ref + "@" + digest}) })

	p := startDevAgent(t)
	job := api.NewServiceJob("no-leftovers-web", "no-leftovers-web", "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("web", "docker").SetConfig("image", ref)
	task.Env = map[string]string{"PORT": fmt.Sprint(freePort(t))}
	task.Resources = &api.Resources{CPU: new(50), MemoryMB: new(64)}
	job.AddTaskGroup(api.NewTaskGroup("g", 1).AddTask(task))
	_, _, err = p.api(t).Jobs().Register(job, nil)
	require.NoError(t, err)
	stub := runningAllocOf(t, p.api(t), *job.ID)
	t.Cleanup(func() { removeAllocContainers(t, []string{stub.ID}) })
	require.Len(t, allocContainers(t, stub.ID), 1, "the task's container")

	p.stop(t, syscall.SIGINT, 30*time.Second)
	require.Empty(t, allocContainers(t, stub.ID), "no container of the dev agent is left, running or stopped")
	p.requireCleanExit(t)
}

// allocContainers lists the IDs of the engine's containers (running or
// not) labelled with allocID.
func allocContainers(t *testing.T, allocID string) []string {
	t.Helper()
	c, err := dockerclient.NewClientWithOpts(dockerclient.FromEnv, dockerclient.WithAPIVersionNegotiation())
	require.NoError(t, err)
	defer c.Close()
	list, err := c.ContainerList(context.Background(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", "drover.alloc_id="+allocID))})
	require.NoError(t, err)
	var ids []string
	for _, ct := range list {
		ids = append(ids, ct.ID)
	}
	return ids
}
