package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/testutil/images"
	"github.com/drover-project/drover/testutil/registry"
	"github.com/drover-project/drover/wire"
)

// autoPortBase keeps these tests' host ports (26000-28099) apart from the
// other Docker suites' on a shared engine.
const autoPortBase = 25000

// autoJobHCL is a system job of the fixture web server following a tag
// with auto_update, rolled one node at a time, with auto_revert.
func autoJobHCL(name, image, interval, soak string) string {
	return fmt.Sprintf(`job %q {
  type        = "system"
  datacenters = ["dc1"]
  update {
    max_parallel      = 1
    health_check      = "task_states"
    min_healthy_time  = "1s"
    healthy_deadline  = "30s"
    progress_deadline = "1m"
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
        image                = %q
        ports                = ["http"]
        auto_update          = true
        auto_update_interval = %q
        auto_update_soak     = %q
      }
      resources {
        cpu    = 50
        memory = 64
      }
    }
  }
}
`, name, image, interval, soak)
}

// pushTag builds the web server image answering "version v" and pushes it
// to repo:tag, returning its digest. broken images cannot start (their
// entrypoint does not exist).
func (dc *dockerCluster) pushTag(t testing.TB, v, tag string, broken bool) string {
	t.Helper()
	img, err := images.Build(images.BuildOptions{Version: v, Seed: dc.seed + int64(len(dc.pushed)) + 1})
	require.NoError(t, err)
	if broken {
		cf, err := img.ConfigFile()
		require.NoError(t, err)
		cfg := cf.Config
		cfg.Entrypoint = []string{"/no-such-entrypoint"}
		img, err = mutate.Config(img, cfg)
		require.NoError(t, err)
	}
	ref := dc.reg.Ref("drover-e2e/auto", tag)
	digest, err := images.Push(img, ref)
	require.NoError(t, err)
	dc.pushed = append(dc.pushed, ref, ref+"@"+digest)
	return digest
}

// runAuto registers (and, unless flags has -detach, monitors) an
// auto-updated job.
func (dc *dockerCluster) runAuto(t testing.TB, name, image, interval, soak string, flags ...string) {
	t.Helper()
	dc.runAutoHCL(t, name, autoJobHCL(name, image, interval, soak), flags...)
}

// runAutoHCL is runAuto with the jobspec given.
func (dc *dockerCluster) runAutoHCL(t testing.TB, name, hcl string, flags ...string) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			for _, line := range strings.Split(dc.srv.logs(), "\n") {
				if strings.Contains(line, "image_watcher") || strings.Contains(line, "deployment") {
					t.Log(line)
				}
			}
		}
	})
	// Registered before the run: a run that fails (a deployment that
	// failed) has started containers too.
	t.Cleanup(func() {
		var allocIDs []string
		if stubs, _, err := dc.api.Jobs().Allocations(name, true, nil); err == nil {
			for _, s := range stubs {
				allocIDs = append(allocIDs, s.ID)
			}
		}
		_, _ = drover(t, dc.srv.httpAddr(), "job", "stop", "-purge", "-yes", name)
		removeAllocContainers(t, allocIDs)
	})
	file := writeJobFile(t, hcl)
	code, out := drover(t, dc.srv.httpAddr(), append(append([]string{"job", "run"}, flags...), file)...)
	if code != 0 {
		dc.logTaskEvents(t, name)
	}
	require.Equal(t, 0, code, out)
}

// imageStatus reads the job's image-updates state.
func imageStatus(t testing.TB, c *api.Client, job string) structs.ImageTaskStatus {
	t.Helper()
	var st wire.ImageUpdates
	_, err := c.Raw().Query("/v1/job/"+job+"/image-updates", &st, nil)
	require.NoError(t, err)
	require.Len(t, st.Tasks, 1)
	return st.Tasks[0]
}

func jobVersion(t testing.TB, c *api.Client, job string) (uint64, string) {
	t.Helper()
	j, _, err := c.Jobs().Info(job, nil)
	require.NoError(t, err)
	return *j.Version, j.TaskGroups[0].Tasks[0].Config["image"].(string)
}

// waitJobAnswers waits until every node's allocation of job answers want.
func (dc *dockerCluster) waitJobAnswers(t testing.TB, job, want string, nodes int, timeout time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		got := dc.jobAnswers(t, job)
		if len(got) != nodes {
			return false
		}
		for _, body := range got {
			if body != want {
				return false
			}
		}
		return true
	}, timeout, 200*time.Millisecond, "every node of %s answers %q", job, want)
}

// TestAutoUpdatePinsAndRollsAfterSoak: a job on app:stable runs the pinned
// digest; after the tag moves, a node that joins during the soak gets the
// old digest; after the soak the watcher's version rolls through the update
// block and every node answers the new version.
func TestAutoUpdatePinsAndRollsAfterSoak(t *testing.T) {
	dc := newDockerClusterN(t, 1, autoPortBase)
	stable := dc.reg.Ref("drover-e2e/auto", "stable")
	d1 := dc.pushTag(t, "1", "stable", false)
	dc.runAuto(t, "auto", stable, "1s", "12s")
	v, image := jobVersion(t, dc.api, "auto")
	require.EqualValues(t, 0, v)
	require.Equal(t, stable+"@"+d1, image, "registration pinned the tag")
	dc.waitJobAnswers(t, "auto", "version 1", 1, 30*time.Second)

	// The tag moves. Once the watcher has seen it, a node joins during the
	// soak: it runs the pinned (old) digest.
	d2 := dc.pushTag(t, "2", "stable", false)
	require.Eventually(t, func() bool { return imageStatus(t, dc.api, "auto").Pending == d2 },
		10*time.Second, 100*time.Millisecond, "the watcher sees the moved tag")
	st := imageStatus(t, dc.api, "auto")
	require.Greater(t, st.SoakLeft, time.Duration(0))
	dc.addClient(t)
	waitReadyNodes(t, dc.api, 2)
	dc.waitJobAnswers(t, "auto", "version 1", 2, 30*time.Second)
	v, _ = jobVersion(t, dc.api, "auto")
	require.EqualValues(t, 0, v, "still soaking when the new node came up")

	// After the soak: version 1 pins d2, rolls one node at a time, and
	// every node answers version 2.
	require.Eventually(t, func() bool { v, _ = jobVersion(t, dc.api, "auto"); return v == 1 },
		30*time.Second, 200*time.Millisecond, "the watcher registers a new version after the soak")
	_, image = jobVersion(t, dc.api, "auto")
	require.Equal(t, stable+"@"+d2, image)
	rolledAt := time.Now()
	require.GreaterOrEqual(t, rolledAt.Sub(st.PendingSince), 12*time.Second, "not before the soak")
	d := waitJobDeployment(t, dc.api, "auto", 1, "successful")
	require.Equal(t, 2, d.TaskGroups["web"].HealthyAllocs)
	dc.waitJobAnswers(t, "auto", "version 2", 2, 30*time.Second)

	// job history shows why.
	code, out := drover(t, dc.srv.httpAddr(), "job", "history", "auto")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "image watcher: task \"server\": "+stable+" moved from "+d1+" to "+d2)
}

// waitJobDeployment waits until a deployment of job's version has status
// (any deployment of the job, not only the latest: an auto-revert replaces
// a failed one at once) and returns it.
func waitJobDeployment(t testing.TB, c *api.Client, job string, version uint64, status string) *api.Deployment {
	t.Helper()
	var found *api.Deployment
	require.Eventually(t, func() bool {
		ds, _, err := c.Jobs().Deployments(job, true, nil)
		require.NoError(t, err)
		for _, d := range ds {
			if d.JobVersion == version && d.Status == status {
				found = d
				return true
			}
		}
		return false
	}, 90*time.Second, 200*time.Millisecond, "no deployment of %s version %d became %s", job, version, status)
	return found
}

// TestAutoUpdateBadDigestRevertsAndIsNotRolledAgain: a broken image pushed
// to the tag fails its deployment, auto-revert brings the previous digest
// back with no blob pulled, and the broken digest is not rolled again.
func TestAutoUpdateBadDigestRevertsAndIsNotRolledAgain(t *testing.T) {
	dc := newDockerClusterN(t, 2, autoPortBase)
	stable := dc.reg.Ref("drover-e2e/auto", "stable")
	d1 := dc.pushTag(t, "1", "stable", false)
	dc.runAuto(t, "auto", stable, "1s", "0s")
	dc.waitJobAnswers(t, "auto", "version 1", 2, 30*time.Second)

	bad := dc.pushTag(t, "2", "stable", true)
	waitJobDeployment(t, dc.api, "auto", 1, "failed")
	blobBytes := dc.reg.TotalBlobBytes()
	d := waitJobDeployment(t, dc.api, "auto", 2, "successful")
	require.Equal(t, 2, d.TaskGroups["web"].HealthyAllocs)
	v, image := jobVersion(t, dc.api, "auto")
	require.EqualValues(t, 2, v)
	require.Equal(t, stable+"@"+d1, image, "the revert restores the previous digest")
	dc.waitJobAnswers(t, "auto", "version 1", 2, 30*time.Second)
	require.Equal(t, blobBytes, dc.reg.TotalBlobBytes(), "the revert pulled no blob")

	// Several intervals later the tag still names the bad digest, the
	// watcher keeps checking, and nothing is rolled.
	heads := dc.reg.ManifestHeads(stable)
	time.Sleep(5 * time.Second)
	require.Greater(t, dc.reg.ManifestHeads(stable), heads+2, "still checking")
	v, _ = jobVersion(t, dc.api, "auto")
	require.EqualValues(t, 2, v, "the bad digest is not rolled again")
	st := imageStatus(t, dc.api, "auto")
	require.Equal(t, []string{bad}, st.Bad)
	require.Equal(t, bad, st.TagDigest)
	require.Empty(t, st.Pending)

	// The tag moves on to a good image: it rolls.
	d3 := dc.pushTag(t, "3", "stable", false)
	waitJobDeployment(t, dc.api, "auto", 3, "successful")
	_, image = jobVersion(t, dc.api, "auto")
	require.Equal(t, stable+"@"+d3, image)
	dc.waitJobAnswers(t, "auto", "version 3", 2, 30*time.Second)
}

// TestAutoUpdateOneCheckPerImageAndRegistryDown: three jobs on one image
// cost one manifest check per interval; a registry that stops answering
// changes nothing running.
func TestAutoUpdateOneCheckPerImageAndRegistryDown(t *testing.T) {
	dc := newDockerClusterN(t, 2, autoPortBase)
	stable := dc.reg.Ref("drover-e2e/auto", "stable")
	dc.pushTag(t, "1", "stable", false)
	for _, name := range []string{"auto-a", "auto-b", "auto-c"} {
		dc.runAuto(t, name, stable, "2s", "0s")
	}
	for _, name := range []string{"auto-a", "auto-b", "auto-c"} {
		dc.waitJobAnswers(t, name, "version 1", 2, 30*time.Second)
	}

	// Over 12 s, at one check per 2 s interval (+ under 10% jitter), the
	// registry sees 5 to 7 HEADs of the tag — not one per job.
	before := dc.reg.ManifestHeads(stable)
	time.Sleep(12 * time.Second)
	n := dc.reg.ManifestHeads(stable) - before
	t.Logf("manifest HEADs of %s in 12s with three jobs at a 2s interval: %d", stable, n)
	require.GreaterOrEqual(t, n, 5)
	require.LessOrEqual(t, n, 7)

	// The registry stops answering: errors are recorded and counted,
	// nothing running changes.
	dc.reg.Close()
	time.Sleep(6 * time.Second)
	for _, name := range []string{"auto-a", "auto-b", "auto-c"} {
		v, _ := jobVersion(t, dc.api, name)
		require.EqualValues(t, 0, v, name)
		for node, body := range dc.jobAnswers(t, name) {
			require.Equal(t, "version 1", body, "%s on %s", name, node)
		}
		st := imageStatus(t, dc.api, name)
		require.NotEmpty(t, st.LastError, "the failed check is recorded")
		require.NotZero(t, st.Errors)
	}
	code, out := drover(t, dc.srv.httpAddr(), "job", "image-updates", "auto-a")
	require.Equal(t, 0, code, out)
	require.Regexp(t, `Last Result\s+= error: `, out)
	resp, err := dc.api.Raw().Response("/v1/metrics?format=prometheus", nil)
	require.NoError(t, err)
	defer resp.Close()
	var sb strings.Builder
	buf := make([]byte, 32<<10)
	for {
		k, err := resp.Read(buf)
		sb.Write(buf[:k])
		if err != nil {
			break
		}
	}
	require.Contains(t, sb.String(), "drover_image_registry_errors_total{registry=")
}

// TestAutoUpdateStateSurvivesLeaderChange: three servers; the leader is
// killed while a moved tag soaks. The new leader's watcher continues from
// the state in raft: the same pending digest and soak start, and the roll
// comes when the original soak ends, not a full soak after the election.
func TestAutoUpdateStateSurvivesLeaderChange(t *testing.T) {
	const soak = 15 * time.Second
	leader, followers, c, stable, d1 := autoLeaderChange(t, soak, nil)
	var v uint64
	var image string

	d2 := pushRandom(t, stable)
	var before structs.ImageTaskStatus
	require.Eventually(t, func() bool { before = imageStatus(t, c, "auto"); return before.Pending == d2 },
		10*time.Second, 100*time.Millisecond, "the watcher sees the moved tag")
	require.Greater(t, before.SoakLeft, 10*time.Second)

	leader.kill()
	waitNewLeader(t, leader.rpcAddr(), followers...)
	after := imageStatus(t, c, "auto")
	require.Equal(t, d2, after.Pending, "the pending digest survived the leader change")
	require.True(t, after.PendingSince.Equal(before.PendingSince), "and so did its soak start: %s vs %s", after.PendingSince, before.PendingSince)
	require.Eventually(t, func() bool { return imageStatus(t, c, "auto").LastCheck.After(after.LastCheck) },
		10*time.Second, 100*time.Millisecond, "the new leader's watcher checks")

	require.Eventually(t, func() bool { v, _ = jobVersion(t, c, "auto"); return v == 1 },
		40*time.Second, 100*time.Millisecond, "the new leader rolls the digest")
	rolled := time.Now()
	_, image = jobVersion(t, c, "auto")
	require.Equal(t, stable+"@"+d2, image)
	require.GreaterOrEqual(t, rolled.Sub(before.PendingSince), soak, "not before the soak")
	require.Less(t, rolled.Sub(before.PendingSince), soak+3*time.Second,
		"the soak ran from the original start, not from the election")
	var st structs.ImageTaskStatus
	require.Eventually(t, func() bool { st = imageStatus(t, c, "auto"); return st.LastRoll != nil },
		5*time.Second, 50*time.Millisecond, "the roll is recorded (an entry after the registration)")
	require.Equal(t, d1, st.LastRoll.From)
	require.Equal(t, d2, st.LastRoll.To)
}

// autoLeaderChange starts a registry whose drover-e2e/auto:stable is a
// random image (digest d1) and three servers, registers through a follower
// system job "auto" on that tag (docker task "server", auto_update every
// 1s with soak, plus the docker config extra), and waits until the
// follower has it at version 0 pinned to d1. c is the follower's client.
func autoLeaderChange(t *testing.T, soak time.Duration, extra map[string]any) (leader *agentProc, followers []*agentProc, c *api.Client, stable, d1 string) {
	t.Helper()
	reg := registry.Start(t, registry.Options{})
	stable = reg.Ref("drover-e2e/auto", "stable")
	d1 = pushRandom(t, stable)

	leader, followers = threeServers(t)
	c = followers[0].client(t)

	job := api.NewSystemJob("auto", "auto", "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("server", "docker").SetConfig("image", stable).SetConfig("auto_update", true).
		SetConfig("auto_update_interval", "1s").SetConfig("auto_update_soak", soak.String())
	for k, v := range extra {
		task.SetConfig(k, v)
	}
	task.Resources = &api.Resources{CPU: new(50), MemoryMB: new(64)}
	job.AddTaskGroup(api.NewTaskGroup("web", 1).AddTask(task))
	_, _, err := c.Jobs().Register(job, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, _, err := c.Jobs().Info("auto", nil); return err == nil },
		5*time.Second, 50*time.Millisecond, "the follower has the job")
	v, image := jobVersion(t, c, "auto")
	require.EqualValues(t, 0, v)
	require.Equal(t, stable+"@"+d1, image)
	return leader, followers, c, stable, d1
}

// threeServers starts a three-server cluster and returns its leader and
// its two followers.
func threeServers(t *testing.T) (leader *agentProc, followers []*agentProc) {
	t.Helper()
	var rpcAddrs []string
	var httpPorts, rpcPorts []int
	var servers []*agentProc
	for range 3 {
		httpPorts, rpcPorts = append(httpPorts, freePort(t)), append(rpcPorts, freePort(t))
		rpcAddrs = append(rpcAddrs, fmt.Sprintf("127.0.0.1:%d", rpcPorts[len(rpcPorts)-1]))
	}
	for i := range 3 {
		var others []string
		for j, a := range rpcAddrs {
			if j != i {
				others = append(others, a)
			}
		}
		servers = append(servers, newServerOnPorts(t, serverSpec{name: fmt.Sprintf("s%d", i+1), bootstrapExpect: 3, retryJoin: others},
			httpPorts[i], rpcPorts[i]))
	}
	leaderAddr := waitLeader(t, servers...)
	for _, s := range servers {
		if s.rpcAddr() == leaderAddr {
			leader = s
		} else {
			followers = append(followers, s)
		}
	}
	require.NotNil(t, leader)
	return leader, followers
}

// pushRandom pushes a new random image to ref and returns its digest.
func pushRandom(t *testing.T, ref string) string {
	t.Helper()
	img, err := random.Image(256, 1)
	require.NoError(t, err)
	d, err := images.Push(img, ref)
	require.NoError(t, err)
	return d
}
