package client

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/drivers/mock"
	"github.com/drover-project/drover/nomad/structs"
)

// aheadDirective asks for image img of task "t" (driver docker) to be
// pulled for deployment dep; extra is merged into the task config (the
// mock driver's prepare_for, prepare_error).
func aheadDirective(dep, img string, extra map[string]any) *structs.PrefetchDirective {
	cfg := map[string]any{"image": img}
	for k, v := range extra {
		cfg[k] = v
	}
	return &structs.PrefetchDirective{DeploymentID: dep, Namespace: "default", JobID: "job", JobVersion: 2,
		State: structs.PrefetchStatePulling,
		Tasks: []*structs.PrefetchTask{{Group: "g", Task: "t", Driver: "docker", Image: img, Config: cfg}}}
}

// startDockerClient is a client with the fake Docker driver (images
// img:1 and img:2 resolvable) running v1 of the job on img:1.
func startDockerClient(t *testing.T) (*fakeServer, *fakeDocker, *Client, string) {
	srv := newFakeServer(t)
	docker := newFakeDocker(map[string]string{"img:1": "sha256:1", "img:2": "sha256:2"})
	cfg := testConfig(srv, t.TempDir())
	cfg.catalog = drivers.Catalog{"docker": docker, "mock": mock.New(hclog.NewNullLogger())}
	c := startClient(t, cfg)
	waitRegistered(t, c)
	v1 := dockerAPIAlloc(c.NodeID(), "img:1", "")
	srv.upsertAlloc(v1)
	require.Eventually(t, func() bool { return srv.clientStatus(v1.ID) == "running" }, waitFor, tick)
	return srv, docker, c, v1.ID
}

func taskMessages(srv *fakeServer, allocID string) string {
	st := srv.taskState(allocID, "t")
	if st == nil {
		return ""
	}
	var msgs []string
	for _, e := range st.Events {
		msgs = append(msgs, e.DisplayMessage+e.Message)
	}
	return strings.Join(msgs, "\n")
}

// TestPrefetchAhead_PullsReportsAndLeasesUntilTheDirectiveGoes: a
// directive is pulled through the driver's prepare step while the old
// allocation keeps running, reported done, shown on the old allocation,
// and its image is leased until the directive disappears.
func TestPrefetchAhead_PullsReportsAndLeasesUntilTheDirectiveGoes(t *testing.T) {
	srv, docker, c, v1 := startDockerClient(t)
	began := time.Now()
	srv.setPrefetch(c.NodeID(), aheadDirective("dep-1", "img:2", map[string]any{"prepare_for": "300ms"}))

	require.Eventually(t, func() bool { return len(srv.prefetchReports()) == 1 }, waitFor, tick)
	require.GreaterOrEqual(t, time.Since(began), 300*time.Millisecond, "the report waits for the pull")
	require.Equal(t, structs.PrefetchReport{DeploymentID: "dep-1", State: structs.PrefetchStateDone}, srv.prefetchReports()[0])
	require.Equal(t, "running", srv.clientStatus(v1), "the old allocation keeps running")
	require.Equal(t, PrefetchStats{Started: 1, Finished: 1}, c.PrefetchStats())
	require.Eventually(t, func() bool {
		m := taskMessages(srv, v1)
		return strings.Contains(m, "Pulling image img:2 ahead of the wave") && strings.Contains(m, "Pulled image img:2 ahead of the wave")
	}, waitFor, tick, "the pull shows as events of the allocation that keeps serving")

	require.Eventually(t, func() bool { _, ok := c.images.gc.Known()["sha256:2"]; return ok }, waitFor, tick,
		"the image pulled ahead is leased")
	time.Sleep(5 * docker.ImageDelay())
	require.Empty(t, docker.removals(), "nothing is collected while the deployment runs")

	srv.setPrefetch(c.NodeID()) // the deployment ended
	require.Eventually(t, func() bool { return slices.Equal(docker.removals(), []string{"sha256:2"}) }, waitFor, tick,
		"without its directive (and no allocation using it) the image goes after image_delay")
	require.Len(t, srv.prefetchReports(), 1, "a finished pull is reported once")
}

// TestPrefetchAhead_CancelledWhenTheDirectiveGoes: a pull in flight is
// cancelled (its context ends) when the deployment stops listing it, and
// is not reported.
func TestPrefetchAhead_CancelledWhenTheDirectiveGoes(t *testing.T) {
	srv, _, c, v1 := startDockerClient(t)
	srv.setPrefetch(c.NodeID(), aheadDirective("dep-1", "img:2", map[string]any{"prepare_for": "1h"}))
	require.Eventually(t, func() bool { return c.PrefetchStats().Started == 1 }, waitFor, tick)
	srv.setPrefetch(c.NodeID())
	require.Eventually(t, func() bool { return c.PrefetchStats().Cancelled == 1 }, waitFor, tick)
	require.Empty(t, srv.prefetchReports())
	require.Eventually(t, func() bool { return strings.Contains(taskMessages(srv, v1), "Pull ahead of the wave cancelled") }, waitFor, tick)
	require.Equal(t, "running", srv.clientStatus(v1))
}

// TestPrefetchAhead_FailureIsReported: a failed pull is reported failed
// with the driver's error and leaves the old allocation running.
func TestPrefetchAhead_FailureIsReported(t *testing.T) {
	srv, _, c, v1 := startDockerClient(t)
	srv.setPrefetch(c.NodeID(), aheadDirective("dep-1", "img:2", map[string]any{"prepare_error": "manifest unknown"}))
	require.Eventually(t, func() bool { return len(srv.prefetchReports()) == 1 }, waitFor, tick)
	r := srv.prefetchReports()[0]
	require.Equal(t, structs.PrefetchStateFailed, r.State)
	require.Contains(t, r.Error, "manifest unknown")
	require.Equal(t, PrefetchStats{Started: 1, Failed: 1}, c.PrefetchStats())
	require.Equal(t, "running", srv.clientStatus(v1))
	require.Eventually(t, func() bool { return strings.Contains(taskMessages(srv, v1), "ahead of the wave failed") }, waitFor, tick)
}

// TestPrefetchAhead_ReportsAgainToANewLeader: a directive listed as
// pulling again after the pull was reported (a new leader with no record)
// gets the result again without a second pull.
func TestPrefetchAhead_ReportsAgainToANewLeader(t *testing.T) {
	srv, _, c, _ := startDockerClient(t)
	srv.setPrefetch(c.NodeID(), aheadDirective("dep-1", "img:2", nil))
	require.Eventually(t, func() bool { return len(srv.prefetchReports()) == 1 }, waitFor, tick)
	srv.setPrefetch(c.NodeID(), aheadDirective("dep-1", "img:2", nil)) // "pulling" again
	require.Eventually(t, func() bool { return len(srv.prefetchReports()) == 2 }, waitFor, tick)
	require.Equal(t, structs.PrefetchStateDone, srv.prefetchReports()[1].State)
	require.Equal(t, int64(1), c.PrefetchStats().Started, "no second pull")
}
