package state

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// testJob returns a canonical-looking system job with one group "web".
func testJob(id string) *structs.Job {
	return &structs.Job{
		Namespace: structs.DefaultNamespace,
		ID:        id,
		Name:      id,
		Type:      structs.JobTypeSystem,
		Priority:  50,
		TaskGroups: []*structs.TaskGroup{{
			Name:  "web",
			Count: 1,
			Tasks: []*structs.Task{{
				Name:   "server",
				Driver: "docker",
				Config: map[string]any{"image": "nginx:1"},
			}},
			Update: &structs.UpdateStrategy{MaxParallel: 1},
		}},
	}
}

// testNode returns a ready node with fresh IDs.
func testNode() *structs.Node {
	return &structs.Node{
		ID:                    uuid.NewString(),
		SecretID:              uuid.NewString(),
		Name:                  "node",
		Datacenter:            "dc1",
		Status:                structs.NodeStatusReady,
		SchedulingEligibility: structs.NodeSchedulingEligible,
	}
}

// testAlloc returns a running-desired, pending allocation of job's group
// "web" on nodeID, without Job (the store links it).
func testAlloc(job *structs.Job, nodeID string) *structs.Allocation {
	return &structs.Allocation{
		ID:            uuid.NewString(),
		Namespace:     job.Namespace,
		EvalID:        uuid.NewString(),
		Name:          job.ID + ".web[0]",
		NodeID:        nodeID,
		JobID:         job.ID,
		JobVersion:    job.Version,
		TaskGroup:     "web",
		DesiredStatus: structs.AllocDesiredStatusRun,
		ClientStatus:  structs.AllocClientStatusPending,
	}
}

// testEval returns a pending evaluation of job.
func testEval(job *structs.Job) *structs.Evaluation {
	return &structs.Evaluation{
		ID:          uuid.NewString(),
		Namespace:   job.Namespace,
		Priority:    job.Priority,
		Type:        job.Type,
		TriggeredBy: structs.EvalTriggerJobRegister,
		JobID:       job.ID,
		Status:      structs.EvalStatusPending,
	}
}

// testDeployment returns a running deployment of job's stored version with
// one canary in group "web".
func testDeployment(job *structs.Job) *structs.Deployment {
	return &structs.Deployment{
		ID:             uuid.NewString(),
		Namespace:      job.Namespace,
		JobID:          job.ID,
		JobVersion:     job.Version,
		JobCreateIndex: job.CreateIndex,
		TaskGroups: map[string]*structs.DeploymentState{
			"web": {DesiredCanaries: 1, DesiredTotal: 2},
		},
		Status:            structs.DeploymentStatusRunning,
		StatusDescription: structs.DeploymentStatusDescriptionRunningNeedsPromotion,
	}
}

// mustJob upserts job at index and returns the stored copy.
func mustJob(t *testing.T, s *StateStore, index uint64, job *structs.Job) *structs.Job {
	t.Helper()
	require.NoError(t, s.UpsertJob(index, nil, job))
	got, err := s.JobByID(nil, job.Namespace, job.ID)
	require.NoError(t, err)
	require.NotNil(t, got)
	return got
}

// mustAlloc returns the stored allocation id.
func mustAlloc(t *testing.T, s *StateStore, id string) *structs.Allocation {
	t.Helper()
	a, err := s.AllocByID(nil, id)
	require.NoError(t, err)
	require.NotNil(t, a, "alloc %s", id)
	return a
}

// ids returns the IDs of allocs, in order.
func allocIDs(allocs []*structs.Allocation) []string {
	out := []string{}
	for _, a := range allocs {
		out = append(out, a.ID)
	}
	return out
}

// jobStatus returns the stored status of job (default namespace, id).
func jobStatus(t *testing.T, s *StateStore, id string) string {
	t.Helper()
	j, err := s.JobByID(nil, "", id)
	require.NoError(t, err)
	require.NotNil(t, j)
	return j.Status
}
