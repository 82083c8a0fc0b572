package agent

import (
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/testutil/registry"
)

// pushRandom writes a small random image to ref and returns its digest.
func pushRandom(t *testing.T, ref string) string {
	t.Helper()
	img, err := random.Image(64, 1)
	require.NoError(t, err)
	return pushImage(t, ref, img)
}

// dockerJob is testJob with its task on the docker driver running image,
// plus extra config keys.
func dockerJob(id, image string, extra map[string]any) *api.Job {
	job := testJob(id)
	task := job.TaskGroups[0].Tasks[0]
	task.Driver = "docker"
	task.Config = map[string]any{"image": image}
	for k, v := range extra {
		task.Config[k] = v
	}
	return job
}

func taskImage(j *api.Job) string { return j.TaskGroups[0].Tasks[0].Config["image"].(string) }

func TestContractPinning(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	reg := registry.Start(t, registry.Options{})
	stable := reg.Ref("app", "stable")
	d1 := pushRandom(t, stable)

	// Registration pins the tag.
	_, _, err := c.Jobs().Register(dockerJob("web", stable, nil), nil)
	require.NoError(t, err)
	job, _, err := c.Jobs().Info("web", nil)
	require.NoError(t, err)
	require.Equal(t, stable+"@"+d1, taskImage(job))
	require.EqualValues(t, 0, *job.Version)

	// The same jobspec while the tag has not moved: an empty plan diff and
	// no new version.
	plan, _, err := c.Jobs().Plan(dockerJob("web", stable, nil), true, nil)
	require.NoError(t, err)
	require.Equal(t, "None", plan.Diff.Type)
	_, _, err = c.Jobs().Register(dockerJob("web", stable, nil), nil)
	require.NoError(t, err)
	versions, _, _, err := c.Jobs().Versions("web", false, nil)
	require.NoError(t, err)
	require.Len(t, versions, 1)

	// The tag moves: the plan shows the digest it would pin, and a
	// registration makes a new version with it.
	d2 := pushRandom(t, stable)
	require.NotEqual(t, d1, d2)
	plan, _, err = c.Jobs().Plan(dockerJob("web", stable, nil), true, nil)
	require.NoError(t, err)
	require.Equal(t, "Edited", plan.Diff.Type)
	cfg := plan.Diff.TaskGroups[0].Tasks[0]
	found := false
	for _, o := range cfg.Objects {
		for _, f := range o.Fields {
			if f.Name == "image" {
				found = true
				require.Equal(t, stable+"@"+d1, f.Old)
				require.Equal(t, stable+"@"+d2, f.New)
			}
		}
	}
	for _, f := range cfg.Fields {
		if f.Name == "config.image" || f.Name == "image" {
			found = true
			require.Equal(t, stable+"@"+d2, f.New)
		}
	}
	require.True(t, found, "the plan diff shows the new digest: %+v", cfg)
	_, _, err = c.Jobs().Register(dockerJob("web", stable, nil), nil)
	require.NoError(t, err)
	job, _, err = c.Jobs().Info("web", nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, *job.Version)
	require.Equal(t, stable+"@"+d2, taskImage(job))

	// A tag that cannot be resolved: 400 naming the task, the image and
	// the registry's answer; nothing written.
	before := *job.JobModifyIndex
	_, _, err = c.Jobs().Register(dockerJob("web", reg.Ref("app", "missing"), nil), nil)
	requireStatus(t, err, 400, `task "server": image "`+reg.Ref("app", "missing")+`" could not be resolved to a digest`)
	requireStatus(t, err, 400, "404 Not Found")
	_, _, err = c.Jobs().Plan(dockerJob("web", reg.Ref("app", "missing"), nil), true, nil)
	requireStatus(t, err, 400, "could not be resolved")
	job, _, err = c.Jobs().Info("web", nil)
	require.NoError(t, err)
	require.Equal(t, before, *job.JobModifyIndex, "nothing written")
	require.EqualValues(t, 1, *job.Version)

	// Revert restores the old version's digest, not what the tag says now.
	_, _, err = c.Jobs().Revert("web", 0, nil, nil, "", "")
	require.NoError(t, err)
	job, _, err = c.Jobs().Info("web", nil)
	require.NoError(t, err)
	require.EqualValues(t, 2, *job.Version)
	require.Equal(t, stable+"@"+d1, taskImage(job))
}

func TestContractPinning_DigestKeptAndOptOut(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	reg := registry.Start(t, registry.Options{})
	pushRandom(t, reg.Ref("app", "stable"))
	other := pushRandom(t, reg.Ref("app", "other"))

	// Written by digest (with a tag that now points elsewhere): kept.
	written := reg.Ref("app", "stable") + "@" + other
	_, _, err := c.Jobs().Register(dockerJob("bydigest", written, nil), nil)
	require.NoError(t, err)
	job, _, err := c.Jobs().Info("bydigest", nil)
	require.NoError(t, err)
	require.Equal(t, written, taskImage(job))

	// pin_digest = false: an image that exists only on the nodes is kept
	// as written and never looked up.
	reg.ResetCounters()
	_, _, err = c.Jobs().Register(dockerJob("local", "only-on-nodes:dev", map[string]any{"pin_digest": false}), nil)
	require.NoError(t, err)
	job, _, err = c.Jobs().Info("local", nil)
	require.NoError(t, err)
	require.Equal(t, "only-on-nodes:dev", taskImage(job))

	// Bad settings are refused naming the field.
	_, _, err = c.Jobs().Register(dockerJob("bad", reg.Ref("app", "stable"), map[string]any{"auto_update": "yes"}), nil)
	requireStatus(t, err, 400, `task "server": auto_update must be true, false or "notify"`)
}
