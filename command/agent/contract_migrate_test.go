package agent

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// TestContractDrainMigratesInWaves drains a node holding three allocations
// of a group with migrate { max_parallel = 1 }: one migrates at a time, the
// next once the client reports the previous replacement healthy (per the
// migrate block: running alone is not enough).
func TestContractDrainMigratesInWaves(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	from := ta.registerNode(t, "node-1")
	job := serviceJob("web", 3)
	job.Update = &api.UpdateStrategy{MaxParallel: new(0)}
	job.TaskGroups[0].Migrate = &api.MigrateStrategy{MaxParallel: new(1)}
	registerAndWait(t, c, job)
	to := ta.registerNode(t, "node-2")

	live := func() (onFrom, onTo []*api.AllocationListStub) {
		allocs, _, err := c.Jobs().Allocations("web", true, nil)
		require.NoError(t, err)
		for _, a := range allocs {
			if a.DesiredStatus != "run" {
				continue
			}
			switch a.NodeID {
			case from:
				onFrom = append(onFrom, a)
			case to:
				onTo = append(onTo, a)
			}
		}
		return onFrom, onTo
	}
	settled := func(wantTo int) []*api.AllocationListStub {
		t.Helper()
		var onTo []*api.AllocationListStub
		require.Eventually(t, func() bool {
			evals, _, err := c.Jobs().Evaluations("web", nil)
			require.NoError(t, err)
			for _, e := range evals {
				if e.Status == "pending" {
					return false
				}
			}
			var onFrom []*api.AllocationListStub
			onFrom, onTo = live()
			return len(onTo) == wantTo && len(onFrom)+len(onTo) == 3
		}, 10*time.Second, 20*time.Millisecond)
		return onTo
	}
	onFrom, _ := live()
	require.Len(t, onFrom, 3)

	_, err := c.Nodes().UpdateDrainOpts(from, &api.DrainOptions{DrainSpec: &api.DrainSpec{Deadline: time.Hour}}, nil)
	require.NoError(t, err)
	for wave := 1; wave <= 3; wave++ {
		onTo := settled(wave)
		// Nothing else moves while the newest replacement is pending.
		var pending *api.AllocationListStub
		for _, a := range onTo {
			if a.ClientStatus == "pending" {
				require.Nil(t, pending, "at most max_parallel migrations in flight")
				pending = a
			}
		}
		require.NotNil(t, pending)
		// Running is not enough: the migrate block's health decides.
		_, err := ta.Server().AllocClientUpdate([]*structs.Allocation{{ID: pending.ID, ClientStatus: structs.AllocClientStatusRunning}})
		require.NoError(t, err)
		settled(wave)
		_, err = ta.Server().AllocClientUpdate([]*structs.Allocation{{ID: pending.ID, ClientStatus: structs.AllocClientStatusRunning,
			DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: new(true)}}})
		require.NoError(t, err)
	}
	onFrom, onTo := live()
	require.Empty(t, onFrom)
	require.Len(t, onTo, 3)
	evals, _, err := c.Jobs().Evaluations("web", nil)
	require.NoError(t, err)
	triggers := map[string]int{}
	for _, e := range evals {
		triggers[e.TriggeredBy]++
	}
	require.Equal(t, 3, triggers["node-drain"], "one evaluation per replacement that became healthy: %v", triggers)
}
