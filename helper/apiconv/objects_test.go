package apiconv

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

func storedJob(t *testing.T) *structs.Job {
	t.Helper()
	job, _, err := JobFromAPI(apiSystemJob(t))
	require.NoError(t, err)
	job.Version = 2
	return job
}

func TestAllocToAPI(t *testing.T) {
	job := storedJob(t)
	healthy := true
	a := &structs.Allocation{
		ID: "a1", Namespace: "default", EvalID: "e1", Name: "edge.proxy[0]", NodeID: "n1",
		JobID: "edge", JobVersion: 2, Job: job, TaskGroup: "proxy",
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning,
		TaskStates:       map[string]*structs.TaskState{"envoy": {State: "running", StartedAt: time.Unix(100, 0).UTC()}},
		DeploymentID:     "d1",
		DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: &healthy, Canary: true},
		AllocatedResources: &structs.AllocatedResources{
			Tasks: map[string]*structs.AllocatedTaskResources{
				"envoy": {Cpu: structs.AllocatedCpuResources{CpuShares: 500}, Memory: structs.AllocatedMemoryResources{MemoryMB: 256}},
			},
			Shared: structs.AllocatedSharedResources{DiskMB: 300, Ports: []structs.AllocatedPortMapping{{Label: "http", Value: 80, To: 8080}}},
		},
	}

	out := AllocToAPI(a)
	require.NotNil(t, out.Job)
	assert.Equal(t, uint64(2), *out.Job.Version)
	assert.Equal(t, "proxy", *out.Job.TaskGroups[0].Name)
	assert.Equal(t, "envoy", out.Job.TaskGroups[0].Tasks[0].Name)
	assert.NotNil(t, out.Metrics, "alloc status -verbose dereferences Metrics")
	assert.Contains(t, out.TaskStates, "envoy")
	assert.Equal(t, "running", out.TaskStates["envoy"].State)
	assert.Nil(t, out.TaskResources, "deprecated; left out so alloc status skips it")
	assert.True(t, *out.DeploymentStatus.Healthy)
	assert.True(t, out.DeploymentStatus.Canary)
	assert.Equal(t, []api.PortMapping{{Label: "http", Value: 80, To: 8080}}, out.AllocatedResources.Shared.Ports)
	require.NotNil(t, out.Resources)
	assert.Equal(t, 500, *out.Resources.CPU)
	assert.Equal(t, 256, *out.Resources.MemoryMB)
	assert.Equal(t, 300, *out.Resources.DiskMB)

	// Before the scheduler records resources, the group's request is used.
	a.AllocatedResources = nil
	out = AllocToAPI(a)
	assert.Equal(t, 500, *out.Resources.CPU)
	assert.Equal(t, 256, *out.Resources.MemoryMB)
	assert.Equal(t, 300, *out.Resources.DiskMB)

	// And without a job, zeros rather than nil pointers.
	out = AllocToAPI(&structs.Allocation{ID: "bare"})
	assert.Nil(t, out.Job)
	assert.NotNil(t, out.Metrics)
	assert.Equal(t, 0, *out.Resources.CPU)
	assert.Equal(t, 0, *out.Resources.DiskMB)
}

func TestAllocStubToAPI(t *testing.T) {
	a := &structs.Allocation{
		ID: "a1", JobID: "edge", JobVersion: 7, Job: storedJob(t), TaskGroup: "proxy",
		ClientStatus:       structs.AllocClientStatusPending,
		AllocatedResources: &structs.AllocatedResources{Shared: structs.AllocatedSharedResources{DiskMB: 1}},
		CreateIndex:        10,
	}
	stub := AllocStubToAPI(a)
	assert.Equal(t, "system", stub.JobType)
	assert.Equal(t, uint64(7), stub.JobVersion, "the allocation's version, not the embedded job's")
	assert.Equal(t, "pending", stub.ClientStatus)
	assert.Equal(t, uint64(10), stub.CreateIndex)
	assert.Nil(t, stub.AllocatedResources)
	assert.Equal(t, int64(1), AllocatedResourcesToAPI(a.AllocatedResources).Shared.DiskMB)
}

func TestEvalToAPI(t *testing.T) {
	e := &structs.Evaluation{
		ID: "e1", Status: structs.EvalStatusComplete, DeploymentID: "d1", Wait: 5 * time.Second,
		FailedTGAllocs: map[string]*structs.AllocationMetric{
			"proxy": {NodesEvaluated: 3, ConstraintFiltered: map[string]int{"${attr.kernel.name} = linux": 1}},
			"other": nil,
		},
		PlanAnnotations: &structs.PlanAnnotations{DesiredTGUpdates: map[string]*structs.DesiredUpdates{"proxy": {Place: 2, Canary: 1}}},
	}
	out := EvalToAPI(e)
	assert.Equal(t, "d1", out.DeploymentID)
	assert.Equal(t, 5*time.Second, out.Wait)
	assert.Equal(t, 3, out.FailedTGAllocs["proxy"].NodesEvaluated)
	assert.NotNil(t, out.FailedTGAllocs["other"], "the CLI prints every failed group's metrics")
	assert.Equal(t, uint64(1), out.PlanAnnotations.DesiredTGUpdates["proxy"].Canary)
}

func TestDeploymentToAPI(t *testing.T) {
	deadline := time.Unix(1_800_000_000, 0).UTC()
	d := &structs.Deployment{
		ID: "d1", JobID: "edge", JobVersion: 3, Status: structs.DeploymentStatusRunning,
		StatusDescription: structs.DeploymentStatusDescriptionRunningNeedsPromotion,
		TaskGroups: map[string]*structs.DeploymentState{"proxy": {
			PlacedCanaries: []string{"a1"}, AutoRevert: true, AutoPromote: true, ProgressDeadline: 10 * time.Minute,
			RequireProgressBy: deadline, DesiredCanaries: 1, DesiredTotal: 5, PlacedAllocs: 1,
		}},
	}
	out := DeploymentToAPI(d)
	assert.Equal(t, "running", out.Status)
	assert.Equal(t, "Deployment is running but requires manual promotion", out.StatusDescription)
	s := out.TaskGroups["proxy"]
	assert.Equal(t, []string{"a1"}, s.PlacedCanaries)
	assert.Equal(t, deadline, s.RequireProgressBy)
	assert.Equal(t, 10*time.Minute, s.ProgressDeadline)
	assert.Equal(t, 5, s.DesiredTotal)
}

func TestNodeToAPI(t *testing.T) {
	n := &structs.Node{
		ID: "n1", SecretID: "s3cr3t", Name: "node-1", Datacenter: "dc1", HTTPAddr: "10.0.0.5:4646",
		Status: structs.NodeStatusReady, SchedulingEligibility: structs.NodeSchedulingEligible,
		Attributes: map[string]string{"os.name": "ubuntu", attrNodeAddress: "10.0.0.5", attrNodeVersion: "0.1.0"},
		Drivers:    map[string]*structs.DriverInfo{"docker": {Detected: true, Healthy: true}},
		ReservedResources: structs.NodeReservedResources{
			Cpu: structs.NodeReservedCpuResources{CpuShares: 100}, Networks: structs.NodeReservedNetworkResources{ReservedHostPorts: "22"},
		},
	}
	out := NodeToAPI(n)
	require.NotNil(t, out.NodeResources, "node status dereferences NodeResources")
	require.NotNil(t, out.ReservedResources, "node status dereferences ReservedResources")
	assert.Equal(t, uint64(100), out.ReservedResources.Cpu.CpuShares)
	assert.Equal(t, "22", out.ReservedResources.Networks.ReservedHostPorts)
	assert.True(t, out.Drivers["docker"].Healthy)
	data, err := json.Marshal(out)
	require.NoError(t, err)
	assert.NotContains(t, string(data), "s3cr3t")
	assert.Equal(t, "s3cr3t", n.SecretID, "the stored node is not modified")

	back := NodeFromAPI(out)
	assert.Equal(t, "node-1", back.Name)
	assert.Equal(t, int64(100), back.ReservedResources.Cpu.CpuShares)
	assert.Empty(t, back.SecretID)

	stub := NodeStubToAPI(n)
	assert.Equal(t, "10.0.0.5", stub.Address)
	assert.Equal(t, "0.1.0", stub.Version)
	assert.Equal(t, "ready", stub.Status)
	assert.Nil(t, stub.Attributes, "only with os=true")
	assert.True(t, stub.Drivers["docker"].Detected)

	delete(n.Attributes, attrNodeAddress)
	assert.Equal(t, "10.0.0.5", NodeStubToAPI(n).Address, "falls back to the HTTP address")
}

func TestJobStubToAPI(t *testing.T) {
	job := storedJob(t)
	job.Status, job.SubmitTime = structs.JobStatusRunning, 42
	stub := JobStubToAPI(job, nil)
	assert.Equal(t, "edge", stub.ID)
	assert.Equal(t, "system", stub.Type)
	assert.Equal(t, "running", stub.Status)
	assert.Equal(t, int64(42), stub.SubmitTime)
	require.NotNil(t, stub.JobSummary, "job status panics on a nil JobSummary")
	assert.Equal(t, "default", stub.JobSummary.Namespace)
	assert.NotNil(t, stub.JobSummary.Summary)
	assert.NotNil(t, stub.JobSummary.Children)

	summary := &structs.JobSummary{JobID: "edge", Namespace: "default",
		Summary: map[string]structs.TaskGroupSummary{"proxy": {Running: 3, Starting: 1}}}
	stub = JobStubToAPI(job, summary)
	assert.Equal(t, api.TaskGroupSummary{Running: 3, Starting: 1}, stub.JobSummary.Summary["proxy"])
}

func TestJobDiffToAPI(t *testing.T) {
	old := storedJob(t)
	updated := storedJob(t)
	updated.TaskGroups[0].Tasks[0].Config["image"] = "envoyproxy/envoy:v1.32"
	d, err := old.Diff(updated, false)
	require.NoError(t, err)
	d.TaskGroups[0].Updates = map[string]uint64{"create/destroy update": 3}

	out := JobDiffToAPI(d)
	assert.Equal(t, "Edited", out.Type)
	assert.Equal(t, map[string]uint64{"create/destroy update": 3}, out.TaskGroups[0].Updates)
	task := out.TaskGroups[0].Tasks[0]
	assert.Equal(t, []string{"forces create/destroy update"}, task.Annotations)
	assert.Equal(t, &api.FieldDiff{Type: "Edited", Name: "image", Old: "envoyproxy/envoy:v1.31", New: "envoyproxy/envoy:v1.32"},
		task.Objects[0].Fields[0])
}

func TestPlanAnnotationsToAPI(t *testing.T) {
	out := PlanAnnotationsToAPI(&structs.PlanAnnotations{})
	assert.NotNil(t, out.DesiredTGUpdates)
	out = PlanAnnotationsToAPI(&structs.PlanAnnotations{DesiredTGUpdates: map[string]*structs.DesiredUpdates{
		"proxy": {Place: 1, DestructiveUpdate: 2, InPlaceUpdate: 3},
	}})
	assert.Equal(t, &api.DesiredUpdates{Place: 1, DestructiveUpdate: 2, InPlaceUpdate: 3}, out.DesiredTGUpdates["proxy"])
}
