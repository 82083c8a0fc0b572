package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	dockerclient "github.com/docker/docker/client"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/testutil/images"
	"github.com/drover-project/drover/testutil/registry"
)

// requireDocker skips the test, loudly, when no Docker daemon answers. On
// the project's CI machine one always does.
func requireDocker(t testing.TB) {
	t.Helper()
	c, err := dockerclient.NewClientWithOpts(dockerclient.FromEnv, dockerclient.WithAPIVersionNegotiation())
	if err == nil {
		_, err = c.Ping(context.Background())
		_ = c.Close()
	}
	if err != nil {
		msg := fmt.Sprintf("DOCKER NOT AVAILABLE: skipping %s: %v", t.Name(), err)
		fmt.Fprintln(os.Stderr, msg)
		t.Skip(msg)
	}
}

// dockerJobHCL is a system job running the fixture web server image.
const dockerJobHCL = `
variable "image" {
  type = string
}
variable "prefetch" {
  type    = bool
  default = true
}
variable "pin_digest" {
  type    = bool
  default = true
}
job "web" {
  type        = "system"
  datacenters = ["dc1"]
  update {
    max_parallel      = 2
    health_check      = "task_states"
    min_healthy_time  = "1s"
    healthy_deadline  = "3m"
    progress_deadline = "5m"
    auto_revert       = true
  }
  group "web" {
    network {
      port "http" {
        to = 8080
      }
    }
    restart {
      attempts = 0
      mode     = "fail"
    }
    task "server" {
      driver = "docker"
      config {
        image              = var.image
        ports              = ["http"]
        prefetch           = var.prefetch
        pin_digest         = var.pin_digest
        image_pull_timeout = "3m"
      }
      resources {
        cpu    = 50
        memory = 64
      }
    }
  }
}
`

// dockerCluster is one server and two clients sharing this machine's Docker
// engine (with disjoint dynamic port ranges), plus a registry the engine
// pulls the fixture images from.
type dockerCluster struct {
	srv     *agentProc
	clients []*agentProc
	api     *api.Client
	reg     *registry.Registry
	jobFile string
	// seed makes this cluster's image layers unique, so the engine (which
	// outlives test runs) never has them already and every pull is real.
	seed   int64
	pushed []string // image references to remove at cleanup
	// digests maps a pushed tag reference to its manifest digest.
	digests  map[string]string
	portBase int
}

func newDockerCluster(t testing.TB) *dockerCluster { return newDockerClusterN(t, 2, 21000) }

// newDockerClusterN is newDockerCluster with n clients (more may join
// later through addClient) whose dynamic port ranges start at
// portBase+1000 (client i gets [portBase+1000*i, +99]). Suites that may run
// at the same time on one engine use different bases, and every range stays
// below 32768, where the kernel's ephemeral ports begin: a connection's
// local port there can hold a container's host port.
func newDockerClusterN(t testing.TB, n, portBase int) *dockerCluster {
	t.Helper()
	requireDocker(t)
	dc := &dockerCluster{reg: registry.Start(t, registry.Options{}), seed: time.Now().UnixNano(), digests: map[string]string{}, portBase: portBase}
	dc.srv = newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, dc.srv)
	dc.api = dc.srv.client(t)
	for range n {
		dc.addClient(t)
	}
	waitReadyNodes(t, dc.api, n)
	dc.jobFile = writeJobFile(t, dockerJobHCL)
	t.Cleanup(func() {
		var allocIDs []string
		if stubs, _, err := dc.api.Jobs().Allocations("web", true, nil); err == nil {
			for _, s := range stubs {
				allocIDs = append(allocIDs, s.ID)
			}
		}
		_, _ = drover(t, dc.srv.httpAddr(), "job", "stop", "-purge", "-yes", "web")
		removeAllocContainers(t, allocIDs)
		removeImages(t, dc.pushed)
	})
	return dc
}

// addClient starts one more Docker client agent with its own port range.
func (dc *dockerCluster) addClient(t testing.TB) *agentProc {
	t.Helper()
	i := len(dc.clients) + 1
	c := newDockerClientAgent(t, fmt.Sprintf("docker-%d", i), dc.portBase+1000*i, dc.srv.httpHostPort())
	dc.clients = append(dc.clients, c)
	return c
}

// removeImages removes the engine's copies of refs (left-overs of a test;
// ones still in use by another container are left alone).
func removeImages(t testing.TB, refs []string) {
	c, err := dockerclient.NewClientWithOpts(dockerclient.FromEnv, dockerclient.WithAPIVersionNegotiation())
	if err != nil {
		return
	}
	defer c.Close()
	for _, ref := range refs {
		_, _ = c.ImageRemove(context.Background(), ref, image.RemoveOptions{PruneChildren: true})
	}
}

// removeAllocContainers force-removes the containers of allocIDs (label
// drover.alloc_id), so that no test leaves one holding a host port for the
// next. Other containers on the shared engine are left alone.
func removeAllocContainers(t testing.TB, allocIDs []string) {
	c, err := dockerclient.NewClientWithOpts(dockerclient.FromEnv, dockerclient.WithAPIVersionNegotiation())
	if err != nil {
		return
	}
	defer c.Close()
	ctx := context.Background()
	ours := map[string]bool{}
	for _, id := range allocIDs {
		ours[id] = true
	}
	list, err := c.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", "drover.alloc_id"))})
	if err != nil {
		return
	}
	for _, ct := range list {
		if !ours[ct.Labels["drover.alloc_id"]] {
			continue
		}
		if err := c.ContainerRemove(ctx, ct.ID, container.RemoveOptions{Force: true}); err != nil {
			t.Logf("remove container %s: %v", ct.ID[:12], err)
		}
	}
}

// newDockerClientAgent starts a client agent whose dynamic ports are
// [minPort, minPort+99], with a short image GC delay.
func newDockerClientAgent(t testing.TB, name string, minPort int, server string) *agentProc {
	t.Helper()
	p := newClientAgentWith(t, name, fmt.Sprintf(`min_dynamic_port = %d
  max_dynamic_port = %d`, minPort, minPort+99), `plugin "docker" {
  config {
    image_delay = "2s"
  }
}`, server)
	return p
}

// pushVersion builds and pushes the web server image answering "version v"
// with padding bytes of filler, and returns its reference.
func (dc *dockerCluster) pushVersion(t testing.TB, v string, padding int64) string {
	t.Helper()
	seed := dc.seed + int64(len(dc.pushed)) + 1
	img, err := images.Build(images.BuildOptions{Version: v, PaddingBytes: padding, Seed: seed})
	require.NoError(t, err)
	ref := dc.reg.Ref("drover-e2e/web", "v"+v)
	digest, err := images.Push(img, ref)
	require.NoError(t, err)
	dc.digests[ref] = digest
	dc.pushed = append(dc.pushed, ref, ref+"@"+digest)
	return ref
}

// pinned is the reference the server pins a pushed tag reference to (the
// one the engine pulls, and knows the image by).
func (dc *dockerCluster) pinned(ref string) string { return ref + "@" + dc.digests[ref] }

func (dc *dockerCluster) run(t testing.TB, args ...string) (int, string) {
	t.Helper()
	code, out := drover(t, dc.srv.httpAddr(), append(append([]string{"job", "run"}, args...), dc.jobFile)...)
	if code != 0 {
		dc.logTaskEvents(t, "web")
	}
	return code, out
}

// logTaskEvents logs the task events of every allocation of job (to see
// why a run failed).
func (dc *dockerCluster) logTaskEvents(t testing.TB, job string) {
	stubs, _, _ := dc.api.Jobs().Allocations(job, true, nil)
	for _, s := range stubs {
		for task, ts := range s.TaskStates {
			for _, ev := range ts.Events {
				t.Logf("alloc %s (v%d) task %s: %s: %s %s", s.ID[:8], s.JobVersion, task, ev.Type, ev.DisplayMessage, ev.DriverError)
			}
		}
	}
}

// nodeAnswers returns, for each node, the body its live allocation's web
// server answers, or "" when nothing answers.
func (dc *dockerCluster) nodeAnswers(t testing.TB) map[string]string { return dc.jobAnswers(t, "web") }

// jobAnswers is nodeAnswers for the job jobID.
func (dc *dockerCluster) jobAnswers(t testing.TB, jobID string) map[string]string {
	out := map[string]string{}
	stubs, _, err := dc.api.Jobs().Allocations(jobID, false, nil)
	if err != nil {
		return out
	}
	httpc := &http.Client{Timeout: 300 * time.Millisecond}
	for _, s := range stubs {
		if _, ok := out[s.NodeID]; !ok {
			out[s.NodeID] = ""
		}
		if s.ClientStatus != "running" {
			continue
		}
		a, _, err := dc.api.Allocations().Info(s.ID, nil)
		if err != nil || a.AllocatedResources == nil {
			continue
		}
		for _, p := range a.AllocatedResources.Shared.Ports {
			resp, err := httpc.Get(fmt.Sprintf("http://127.0.0.1:%d/", p.Value))
			if err != nil {
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				out[s.NodeID] = strings.TrimSpace(string(b))
			}
		}
	}
	return out
}

// gapRecorder samples every node's answer every 100ms and records, per
// node, the longest time it answered nothing.
type gapRecorder struct {
	mu       sync.Mutex
	lastSeen map[string]time.Time
	longest  map[string]time.Duration
	answers  map[string]map[string]bool // node → bodies seen
	stop     chan struct{}
	done     chan struct{}
}

func (dc *dockerCluster) recordGaps(t testing.TB) *gapRecorder {
	g := &gapRecorder{lastSeen: map[string]time.Time{}, longest: map[string]time.Duration{},
		answers: map[string]map[string]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	start := time.Now()
	go func() {
		defer close(g.done)
		for {
			select {
			case <-g.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			now := time.Now()
			for node, body := range dc.nodeAnswers(t) {
				g.mu.Lock()
				last, ok := g.lastSeen[node]
				if !ok {
					last = start
				}
				if body != "" {
					if gap := now.Sub(last); gap > g.longest[node] {
						g.longest[node] = gap
					}
					g.lastSeen[node] = now
					if g.answers[node] == nil {
						g.answers[node] = map[string]bool{}
					}
					g.answers[node][body] = true
				}
				g.mu.Unlock()
			}
		}
	}()
	return g
}

// finish stops sampling and returns the longest gap per node.
func (g *gapRecorder) finish() map[string]time.Duration {
	close(g.stop)
	<-g.done
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.longest
}

// waitAllAnswer waits until every node answers want.
func (dc *dockerCluster) waitAllAnswer(t testing.TB, want string, timeout time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		got := dc.nodeAnswers(t)
		if len(got) != len(dc.clients) {
			return false
		}
		for _, body := range got {
			if body != want {
				return false
			}
		}
		return true
	}, timeout, 200*time.Millisecond, "every node answers %q", want)
}

// rollOut runs version with the given prefetch setting while the registry
// is throttled so that the new image takes pullTime to pull, and returns
// the longest gap per node and the time the rollout took.
func (dc *dockerCluster) rollOut(t testing.TB, ref string, prefetch bool, bandwidth int64) (map[string]time.Duration, time.Duration) {
	t.Helper()
	dc.reg.SetBandwidth(bandwidth)
	defer dc.reg.SetBandwidth(0)
	rec := dc.recordGaps(t)
	start := time.Now()
	code, out := dc.run(t, "-var", "image="+ref, "-var", fmt.Sprintf("prefetch=%t", prefetch))
	took := time.Since(start)
	gaps := rec.finish()
	require.Equal(t, 0, code, out)
	return gaps, took
}

func TestDockerPrefetchBeforeKill(t *testing.T) {
	dc := newDockerCluster(t)
	const padding = 10 << 20    // 10 MiB of incompressible filler
	const bandwidth = 480 << 10 // ~21 s for the filler at 480 KiB/s
	v1 := dc.pushVersion(t, "1", 0)
	v2 := dc.pushVersion(t, "2", padding)
	v3 := dc.pushVersion(t, "3", padding+1)

	code, out := dc.run(t, "-var", "image="+v1)
	require.Equal(t, 0, code, out)
	dc.waitAllAnswer(t, "version 1", 30*time.Second)

	// With prefetch, the old container serves during the whole pull: the
	// per-node gap is the stop + start, not the pull.
	gaps, took := dc.rollOut(t, v2, true, bandwidth)
	dc.waitAllAnswer(t, "version 2", 30*time.Second)
	require.GreaterOrEqual(t, took, 20*time.Second, "the throttled pull takes at least 20s")
	for node, gap := range gaps {
		t.Logf("prefetch: node %s longest gap %s (rollout %s)", node[:8], gap, took)
		require.Less(t, gap, 3*time.Second, "node %s answered nothing for %s", node[:8], gap)
	}

	// Without prefetch (Nomad's order), the node is dark for the pull.
	gaps, took = dc.rollOut(t, v3, false, bandwidth)
	dc.waitAllAnswer(t, "version 3", 30*time.Second)
	for node, gap := range gaps {
		t.Logf("prefetch=false: node %s longest gap %s (rollout %s)", node[:8], gap, took)
		// 10 MiB of new filler at 480 KiB/s takes over 21s to pull.
		require.GreaterOrEqual(t, gap, 20*time.Second, "kill-then-pull leaves the node dark for the whole pull")
	}
}

func TestDockerFailedPullKillsNothingAndRevertsWithoutPull(t *testing.T) {
	dc := newDockerCluster(t)
	v1 := dc.pushVersion(t, "1", 0)
	code, out := dc.run(t, "-var", "image="+v1)
	require.Equal(t, 0, code, out)
	dc.waitAllAnswer(t, "version 1", 30*time.Second)

	// Version 2 names a tag that does not exist: its deployment fails with a
	// reason naming the image, the old containers keep answering, and
	// auto_revert brings version 1 back with no new pull.
	pullsBefore := dc.reg.TotalBlobBytes()
	rec := dc.recordGaps(t)
	// (pin_digest = false: the server would refuse an unresolvable tag.)
	code, out = dc.run(t, "-var", "pin_digest=false", "-var", "image="+dc.reg.Ref("drover-e2e/web", "no-such-tag"))
	gaps := rec.finish()
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "Failed due to unhealthy allocations - rolling back to job version 0")
	for node, gap := range gaps {
		require.Less(t, gap, 3*time.Second, "node %s went dark on a failed pull", node[:8])
	}
	dc.waitAllAnswer(t, "version 1", 60*time.Second)
	require.Equal(t, pullsBefore, dc.reg.TotalBlobBytes(), "the revert pulled nothing")

	// The failed allocation says why, naming the image.
	stubs, _, err := dc.api.Jobs().Allocations("web", true, nil)
	require.NoError(t, err)
	found := false
	for _, s := range stubs {
		if s.JobVersion != 1 {
			continue
		}
		a, _, err := dc.api.Allocations().Info(s.ID, nil)
		require.NoError(t, err)
		for _, ev := range a.TaskStates["server"].Events {
			if strings.Contains(ev.DisplayMessage+ev.DriverError, "no-such-tag") {
				found = true
			}
		}
	}
	require.True(t, found, "a task event names the image that failed to pull")

	// Stopping the job stops the containers at once.
	start := time.Now()
	code, out = drover(t, dc.srv.httpAddr(), "job", "stop", "-yes", "web")
	require.Equal(t, 0, code, out)
	require.Eventually(t, func() bool {
		for _, body := range dc.nodeAnswers(t) {
			if body != "" {
				return false
			}
		}
		return true
	}, 10*time.Second, 100*time.Millisecond, "containers stop at once")
	require.Less(t, time.Since(start), 10*time.Second)
}

func TestDockerClientRestartDuringPull(t *testing.T) {
	dc := newDockerCluster(t)
	v1 := dc.pushVersion(t, "1", 0)
	v2 := dc.pushVersion(t, "2", 8<<20)
	code, out := dc.run(t, "-var", "image="+v1)
	require.Equal(t, 0, code, out)
	dc.waitAllAnswer(t, "version 1", 30*time.Second)

	dc.reg.SetBandwidth(512 << 10)
	code, out = dc.run(t, "-detach", "-var", "image="+v2)
	require.Equal(t, 0, code, out)
	require.Eventually(t, func() bool { return dc.reg.TotalBlobBytes() > 1<<20 }, 30*time.Second, 100*time.Millisecond,
		"the pull is under way")
	victim := dc.clients[0]
	victim.kill()
	victim.start(t)
	// The old container kept serving, and the restarted client finishes the
	// update.
	for _, body := range dc.nodeAnswers(t) {
		require.Equal(t, "version 1", body)
	}
	dc.reg.SetBandwidth(0)
	dc.waitAllAnswer(t, "version 2", 90*time.Second)
	d := waitDeployment(t, dc.api, 1, "successful")
	require.Equal(t, 2, d.TaskGroups["web"].HealthyAllocs)
}

// imagePresent reports whether the Docker engine has ref.
func imagePresent(t testing.TB, ref string) bool {
	t.Helper()
	c, err := dockerclient.NewClientWithOpts(dockerclient.FromEnv, dockerclient.WithAPIVersionNegotiation())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.ImageInspect(context.Background(), ref)
	return err == nil
}

func TestDockerPreviousImageSurvivesGCUntilDeploymentIsOver(t *testing.T) {
	dc := newDockerCluster(t)
	v1 := dc.pushVersion(t, "1", 0)
	v2 := dc.pushVersion(t, "2", 4<<20)
	code, out := dc.run(t, "-var", "image="+v1)
	require.Equal(t, 0, code, out)
	dc.waitAllAnswer(t, "version 1", 30*time.Second)
	require.True(t, imagePresent(t, dc.pinned(v1)))

	// While version 2 rolls out (its pull is throttled to a few seconds, and
	// image_delay is 2s), version 1's image stays: a revert would need it.
	dc.reg.SetBandwidth(1 << 20)
	code, out = dc.run(t, "-detach", "-var", "image="+v2)
	require.Equal(t, 0, code, out)
	deadline := time.Now().Add(90 * time.Second)
	for {
		d := latestDeployment(t, dc.api)
		if d != nil && d.JobVersion == 1 && d.Status == "successful" {
			break
		}
		require.True(t, imagePresent(t, dc.pinned(v1)), "version 1's image was collected during the rollout")
		require.True(t, time.Now().Before(deadline), "version 2 never finished rolling out")
		time.Sleep(250 * time.Millisecond)
	}
	dc.reg.SetBandwidth(0)

	// Once the rollout is over, the unleased image goes after image_delay.
	require.Eventually(t, func() bool { return !imagePresent(t, dc.pinned(v1)) }, 60*time.Second, 250*time.Millisecond,
		"version 1's image is collected after its deployment is over")
	require.True(t, imagePresent(t, dc.pinned(v2)), "the running version's image stays")
}
