package scheduler

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// TestGates_HoldNextWave: a group with a gate starts its first wave
// freely, then starts no wave until the deployment watcher recorded that
// its gates passed at its healthy count (DeploymentGate.PassedAt).
func TestGates_HoldNextWave(t *testing.T) {
	for _, meta := range []map[string]string{
		{structs.DroverMetaGateWebhook: "http://gate.example/"},
		{structs.DroverMetaAnalysisQuery: "up", structs.DroverMetaAnalysisCondition: "== 1"},
	} {
		for _, c := range []struct {
			name string
			gate *structs.DeploymentGate
			want string
		}{
			{"no pass yet holds", nil, "replace= inplace= deferred=n02,n03 place= total=4"},
			{"passed at an older count holds", &structs.DeploymentGate{PassedAt: 1}, "replace= inplace= deferred=n02,n03 place= total=4"},
			{"passed at this count lets the wave go", &structs.DeploymentGate{PassedAt: 2, Passed: 1}, "replace=n02,n03 inplace= deferred= place= total=4"},
		} {
			t.Run(c.name, func(t *testing.T) {
				f := newWavesFleet(4, 2, meta)
				f.onV1(healthy, 0, 1)
				d := f.deployment(structs.DeploymentStatusRunning)
				d.TaskGroups["web"].HealthyAllocs = 2
				d.TaskGroups["web"].Gate = c.gate
				require.Equal(t, c.want, wavesSummary(reconcile(f.v1, f.nodes, f.allocs, d)))
			})
		}
		t.Run("the first wave is not held", func(t *testing.T) {
			f := newWavesFleet(4, 2, meta)
			require.Equal(t, "replace=n00,n01 inplace= deferred=n02,n03 place= total=4", wavesSummary(reconcile(f.v1, f.nodes, f.allocs, nil)))
		})
	}
	// Without a gate the same state goes on.
	f := newWavesFleet(4, 2, nil)
	f.onV1(healthy, 0, 1)
	d := f.deployment(structs.DeploymentStatusRunning)
	d.TaskGroups["web"].HealthyAllocs = 2
	require.Equal(t, "replace=n02,n03 inplace= deferred= place= total=4", wavesSummary(reconcile(f.v1, f.nodes, f.allocs, d)))
}

// TestGates_ServiceHoldsNextWave: the same hold in a service job's
// rolling update.
func TestGates_ServiceHoldsNextWave(t *testing.T) {
	h := newHarness(t)
	addNodes(h, 3)
	v0 := canaryJob(3, 0, 1)
	v0.TaskGroups[0].Meta = map[string]string{structs.DroverMetaGateWebhook: "http://gate.example/"}
	h.state.upsertJob(v0)
	h.process(v0)
	markHealthy(h, "web")
	setDeployment(h, "web", func(d *structs.Deployment) { d.Status = structs.DeploymentStatusSuccessful })
	v1 := nextVersion(v0, destructiveChange)
	h.state.upsertJob(v1)
	h.process(v1)
	require.Equal(t, map[uint64]int{0: 2, 1: 1}, versions(h, "web"), "the first wave is not held")
	markHealthy(h, "web")
	setDeployment(h, "web", func(d *structs.Deployment) { d.TaskGroups["web"].HealthyAllocs = 1 })
	h.process(v1)
	require.Equal(t, map[uint64]int{0: 2, 1: 1}, versions(h, "web"), "held until the gates pass at 1 healthy")
	setDeployment(h, "web", func(d *structs.Deployment) {
		d.TaskGroups["web"].Gate = &structs.DeploymentGate{PassedAt: 1, Passed: 1}
	})
	h.process(v1)
	require.Equal(t, map[uint64]int{0: 1, 1: 2}, versions(h, "web"), "the gates passed: the next wave")
}
