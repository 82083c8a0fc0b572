package deploymentwatcher

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// TestMachine_SuccessUnderPartition: a deployment whose job holds nodes
// with drover.partition succeeds for the nodes it may update (the
// scheduler leaves the held ones out of DesiredTotal) and says so in its
// description.
func TestMachine_SuccessUnderPartition(t *testing.T) {
	job := testJob(1, "nginx:2")
	job.TaskGroups[0].Meta = map[string]string{structs.DroverMetaPartition: "5"}
	d := testDeployment(job)
	m := NewMachine(d, job, t0)
	_, _ = m.Step(Init{}, t0)
	allHealthy := []*structs.Allocation{testAlloc("a1", healthy), testAlloc("a2", healthy), testAlloc("a3", healthy)}
	got, _ := m.Step(AllocHealthChanged{Deployment: withHealthy(d, 3), Allocs: allHealthy}, at(1))
	require.Equal(t, []Effect{
		MarkStable{Version: 1},
		UpdateStatus{Status: structs.DeploymentStatusSuccessful,
			Description: `Deployment completed successfully; drover.partition keeps nodes on older versions (web: 5)`},
		Stop{},
	}, got)
}

func TestSuccessDescription(t *testing.T) {
	job := testJob(1, "nginx:2")
	require.Equal(t, structs.DeploymentStatusDescriptionSuccessful, successDescription(job))
	require.Equal(t, structs.DeploymentStatusDescriptionSuccessful, successDescription(nil))
	job.TaskGroups[0].Meta = map[string]string{structs.DroverMetaPartition: "0"}
	require.Equal(t, structs.DeploymentStatusDescriptionSuccessful, successDescription(job), "partition 0 holds nothing")
	api := *job.TaskGroups[0]
	api.Name, api.Meta = "api", map[string]string{structs.DroverMetaPartition: "2"}
	job.TaskGroups = append(job.TaskGroups, &api)
	job.TaskGroups[0].Meta = map[string]string{structs.DroverMetaPartition: "1"}
	require.Equal(t, `Deployment completed successfully; drover.partition keeps nodes on older versions (api: 2, web: 1)`, successDescription(job))
}
