package structs

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// surgeJob is testJob without what surge refuses (its static admin port).
func surgeJob() *Job {
	j := testJob()
	j.TaskGroups[0].Networks[0].ReservedPorts = nil
	j.TaskGroups[0].Meta = map[string]string{DroverMetaSurge: "true"}
	return j
}

// TestValidateDroverSurge: drover.surge is refused naming the key and what
// two allocations on one node would both claim.
func TestValidateDroverSurge(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(j *Job)
		want   []string // nil: valid
	}{
		{"dynamic ports only", func(*Job) {}, nil},
		{"false keeps the default rollout", func(j *Job) {
			j.TaskGroups[0].Meta[DroverMetaSurge] = "false"
			j.TaskGroups[0].Networks[0].ReservedPorts = []Port{{Label: "admin", Value: 9000}}
		}, nil},
		{"bad value", func(j *Job) { j.TaskGroups[0].Meta[DroverMetaSurge] = "yes" },
			[]string{`meta "drover.surge": must be "true" or "false", got "yes"`}},
		{"group static port", func(j *Job) {
			j.TaskGroups[0].Networks[0].ReservedPorts = []Port{{Label: "admin", Value: 9000}}
		}, []string{`meta "drover.surge": the old and the new allocation run on the node at once, so they would collide on static port "admin" (9000) of group "web"`}},
		{"bridge static port", func(j *Job) {
			j.TaskGroups[0].Networks[0].Mode = "bridge"
			j.TaskGroups[0].Networks[0].ReservedPorts = []Port{{Label: "dns", Value: 53, To: 53}}
		}, []string{`collide on static port "dns" (53) of group "web"`}},
		{"task static port", func(j *Job) {
			j.TaskGroups[0].Networks = nil
			j.TaskGroups[0].Services = nil
			j.TaskGroups[0].Tasks[0].Services = nil
			j.TaskGroups[0].Tasks[0].Resources.Networks = []*NetworkResource{{ReservedPorts: []Port{{Label: "p", Value: 7000}}}}
		}, []string{`collide on static port "p" (7000) of task "server"`}},
		{"host volume", func(j *Job) {
			j.TaskGroups[0].Volumes = map[string]*VolumeRequest{"data": {Name: "data", Type: VolumeTypeHost, Source: "shared"}}
		}, []string{`collide on host volume "data" (source "shared")`}},
		{"sticky disk", func(j *Job) { j.TaskGroups[0].EphemeralDisk.Sticky = true },
			[]string{`collide on ephemeral_disk with sticky or migrate`}},
		{"no deployment", func(j *Job) {
			j.TaskGroups[0].Update.MaxParallel = 0
			j.TaskGroups[0].Update.Canary = 0
		}, []string{`meta "drover.surge": needs a deployment`}},
		{"service job", func(j *Job) {
			j.Type = JobTypeService
			j.TaskGroups[0].Update.Canary = 0
		}, []string{`meta "drover.surge": only system jobs roll out by surge, not service jobs`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := surgeJob()
			c.mutate(j)
			err := j.Validate()
			if c.want == nil {
				require.NoError(t, err)
				return
			}
			var verr *ValidationError
			require.True(t, errors.As(err, &verr), "%v", err)
			for _, w := range c.want {
				assert.True(t, containsProblem(verr.Problems, w), "want %q in:\n%s", w, err)
			}
		})
	}
}

func TestTaskGroupDroverSurge(t *testing.T) {
	assert.True(t, surgeJob().TaskGroups[0].DroverSurge())
	assert.False(t, testJob().TaskGroups[0].DroverSurge())
	assert.False(t, (*TaskGroup)(nil).DroverSurge())
}
