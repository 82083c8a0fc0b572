package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/testutil/registry"
	"github.com/drover-project/drover/wire"
)

// autoUpdateAgent starts an agent and a registry, and returns them with
// the reference of the registry's app:stable (nothing pushed yet).
func autoUpdateAgent(t *testing.T) (*testAgent, *registry.Registry, string) {
	t.Helper()
	ta := newTestAgent(t, "")
	reg := registry.Start(t, registry.Options{})
	return ta, reg, reg.Ref("app", "stable")
}

// registerWatched registers job "web" on image with the docker config
// extra and waits until the watcher has checked its task once.
func registerWatched(t *testing.T, c *api.Client, image string, extra map[string]any) wire.ImageUpdates {
	t.Helper()
	_, _, err := c.Jobs().Register(dockerJob("web", image, extra), nil)
	require.NoError(t, err)
	var st wire.ImageUpdates
	require.Eventually(t, func() bool {
		_, err := c.Raw().Query("/v1/job/web/image-updates", &st, nil)
		require.NoError(t, err)
		return len(st.Tasks) == 1 && !st.Tasks[0].LastCheck.IsZero()
	}, 10*time.Second, 50*time.Millisecond, "the watcher checks a new auto-updated task")
	return st
}

// checkNow asks the watcher to check job "web" now and returns what it
// says.
func checkNow(t *testing.T, c *api.Client) wire.ImageUpdates {
	t.Helper()
	var st wire.ImageUpdates
	_, err := c.Raw().Write("/v1/job/web/image-updates/check", nil, &st, nil)
	require.NoError(t, err)
	return st
}

// waitJobVersion waits until job "web" is at version, and returns it.
func waitJobVersion(t *testing.T, c *api.Client, version uint64, msg string) *api.Job {
	t.Helper()
	var job *api.Job
	require.Eventually(t, func() bool {
		var err error
		job, _, err = c.Jobs().Info("web", nil)
		require.NoError(t, err)
		return *job.Version == version
	}, 10*time.Second, 50*time.Millisecond, msg)
	return job
}

func TestContractAutoUpdate(t *testing.T) {
	ta, reg, stable := autoUpdateAgent(t)
	c := ta.client
	d1 := pushRandom(t, stable)

	// A long interval: only "check now" (and the watcher's first check)
	// look at the tag during the test.
	auto := map[string]any{"auto_update": true, "auto_update_interval": "10m"}
	st := registerWatched(t, c, stable, auto)
	task := st.Tasks[0]
	require.Equal(t, stable, task.Reference)
	require.Equal(t, d1, task.Pinned)
	require.Equal(t, d1, task.TagDigest)
	require.True(t, task.AutoUpdate)
	require.Equal(t, 10*time.Minute, task.Interval)
	require.Empty(t, task.Pending)

	// The tag moves; "check now" sees it, and with no soak a new version
	// pinning the new digest is registered, with its reason.
	d2 := pushRandom(t, stable)
	st = checkNow(t, c)
	require.Equal(t, d2, st.Tasks[0].TagDigest)
	job := waitJobVersion(t, c, 1, "the moved tag rolls")
	require.Equal(t, stable+"@"+d2, taskImage(job))
	versions, _, _, err := c.Jobs().Versions("web", false, nil)
	require.NoError(t, err)
	require.NotNil(t, versions[0].VersionTag, "job history shows why the watcher made the version")
	require.Contains(t, versions[0].VersionTag.Description, stable+" moved from "+d1+" to "+d2)
	require.Nil(t, versions[1].VersionTag)

	// The roll is recorded in its own raft entry, after the version.
	require.Eventually(t, func() bool {
		_, err = c.Raw().Query("/v1/job/web/image-updates", &st, nil)
		require.NoError(t, err)
		return st.Tasks[0].LastRoll != nil
	}, 10*time.Second, 20*time.Millisecond, "the watcher records its roll")
	require.EqualValues(t, 1, st.Tasks[0].LastRoll.JobVersion)
	require.Equal(t, d1, st.Tasks[0].LastRoll.From)

	// Re-running the original jobspec now pins the tag's digest: no change.
	_, _, err = c.Jobs().Register(dockerJob("web", stable, auto), nil)
	require.NoError(t, err)
	job, _, _ = c.Jobs().Info("web", nil)
	require.EqualValues(t, 1, *job.Version)

	// Metrics.
	body := metricsText(t, ta)
	require.Contains(t, body, `drover_image_checks_total{registry="`+reg.Addr()+`"}`)
	require.Contains(t, body, "drover_image_updates_total 1")

	// Errors: unknown job, job without auto-update.
	_, err = c.Raw().Write("/v1/job/nosuch/image-updates/check", nil, &st, nil)
	requireStatus(t, err, 404, "job not found")
	_, _, err = c.Jobs().Register(dockerJob("plain", stable, nil), nil)
	require.NoError(t, err)
	_, err = c.Raw().Write("/v1/job/plain/image-updates/check", nil, &st, nil)
	requireStatus(t, err, 400, `job "plain" has no docker task with auto_update = true`)
	_, err = c.Raw().Query("/v1/job/plain/image-updates", &st, nil)
	require.NoError(t, err)
	require.False(t, st.Tasks[0].AutoUpdate)
	require.True(t, strings.HasSuffix(st.Tasks[0].Image, d2))
}
