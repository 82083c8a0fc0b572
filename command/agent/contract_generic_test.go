package agent

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// serviceJob is a service job of count raw_exec allocations.
func serviceJob(id string, count int) *api.Job {
	job := api.NewServiceJob(id, id, "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("server", "raw_exec").SetConfig("command", "/bin/sleep").SetConfig("args", []string{"3600"})
	task.Resources = &api.Resources{CPU: new(100), MemoryMB: new(64)}
	job.AddTaskGroup(api.NewTaskGroup("web", count).AddTask(task))
	return job
}

func TestContractServiceJobPlacesCount(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	nodes := map[string]bool{}
	for _, name := range []string{"node-1", "node-2", "node-3", "node-4"} {
		nodes[ta.registerNode(t, name)] = true
	}
	eval := registerAndWait(t, c, serviceJob("svc", 3))
	require.Equal(t, "complete", eval.Status)
	require.NotEmpty(t, eval.DeploymentID, "a service job with the default update block gets a deployment")
	require.Empty(t, eval.FailedTGAllocs)

	allocs, _, err := c.Jobs().Allocations("svc", false, nil)
	require.NoError(t, err)
	require.Len(t, allocs, 3)
	used := map[string]bool{}
	for _, a := range allocs {
		require.True(t, nodes[a.NodeID])
		used[a.NodeID] = true
	}
	require.Len(t, used, 3, "three allocations on three different nodes")

	job, _, err := c.Jobs().Info("svc", nil)
	require.NoError(t, err)
	require.Equal(t, "service", *job.Type)
	require.NotNil(t, job.TaskGroups[0].ReschedulePolicy)
	require.True(t, *job.TaskGroups[0].ReschedulePolicy.Unlimited)

	// Scaling the count down through a new version stops the extras.
	smaller := serviceJob("svc", 1)
	registerAndWait(t, c, smaller)
	allocs, _, err = c.Jobs().Allocations("svc", false, nil)
	require.NoError(t, err)
	live := 0
	for _, a := range allocs {
		if a.DesiredStatus == "run" {
			live++
		}
	}
	require.Equal(t, 1, live)
}

func TestContractPlacementFailureBlocks(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	ta.registerNode(t, "node-1")
	job := serviceJob("big", 2)
	job.TaskGroups[0].Tasks[0].Resources.MemoryMB = new(6000)
	eval := registerAndWait(t, c, job)
	require.Equal(t, "complete", eval.Status)
	require.Contains(t, eval.FailedTGAllocs, "web")
	require.Equal(t, 1, eval.FailedTGAllocs["web"].DimensionExhausted["memory"])
	require.Equal(t, 1, eval.QueuedAllocations["web"])
	require.NotEmpty(t, eval.BlockedEval)
	blocked, _, err := c.Evaluations().Info(eval.BlockedEval, nil)
	require.NoError(t, err)
	require.Equal(t, "blocked", blocked.Status)

	// ?related=true (which the api client always sends) lists the
	// evaluations linked to this one, both ways; without it, none.
	for id, want := range map[string]string{eval.ID: eval.BlockedEval, eval.BlockedEval: eval.ID} {
		withRelated, _, err := c.Evaluations().Info(id, nil)
		require.NoError(t, err)
		require.Len(t, withRelated.RelatedEvals, 1, id)
		require.Equal(t, want, withRelated.RelatedEvals[0].ID)
		var plain api.Evaluation
		_, err = c.Raw().Query("/v1/evaluation/"+id, &plain, nil)
		require.NoError(t, err)
		require.Nil(t, plain.RelatedEvals, "related evaluations only when asked for")
	}

	// A new node is capacity: the blocked evaluation runs again and places.
	ta.registerNode(t, "node-2")
	require.Eventually(t, func() bool {
		allocs, _, err := c.Jobs().Allocations("big", false, nil)
		return err == nil && len(allocs) == 2
	}, 10*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool {
		b, _, err := c.Evaluations().Info(eval.BlockedEval, nil)
		return err == nil && b.Status == "complete"
	}, 10*time.Second, 50*time.Millisecond)
}

func TestContractBatchJobAccepted(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	ta.registerNode(t, "node-1")
	job := api.NewBatchJob("report", "report", "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("run", "raw_exec").SetConfig("command", "/bin/true")
	job.AddTaskGroup(api.NewTaskGroup("g", 2).AddTask(task))
	eval := registerAndWait(t, c, job)
	require.Equal(t, "complete", eval.Status)
	require.Empty(t, eval.DeploymentID, "batch jobs have no deployments")
	allocs, _, err := c.Jobs().Allocations("report", false, nil)
	require.NoError(t, err)
	require.Len(t, allocs, 2)
	info, _, err := c.Jobs().Info("report", nil)
	require.NoError(t, err)
	require.Equal(t, 1, *info.TaskGroups[0].ReschedulePolicy.Attempts, "batch reschedule default")
}
