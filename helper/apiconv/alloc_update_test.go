package apiconv

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/testutil/fill"
)

// jsonRoundTrip copies in to out through their JSON encoding: the
// conversion the client and the agent used before these by-name ones, kept
// here to show the two agree.
func jsonRoundTrip(t *testing.T, in, out any) {
	t.Helper()
	raw, err := json.Marshal(in)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, out))
}

// filledAPIAlloc is an api allocation with every field set but its job;
// interface values are strings, which JSON keeps as they are.
func filledAPIAlloc() *api.Allocation {
	a := fill.New[api.Allocation](fill.Options{Interface: func(n int) any { return "v" + string(rune('a'+n%26)) }})
	a.Job = nil
	return a
}

func TestAllocFromAPIWithoutJob_EveryFieldAsTheJSONRoundTrip(t *testing.T) {
	a := filledAPIAlloc()
	got := AllocFromAPIWithoutJob(a)
	var viaJSON structs.Allocation
	jsonRoundTrip(t, a, &viaJSON)
	require.Equal(t, &viaJSON, got)
	assertSameByName(t, reflect.ValueOf(got), reflect.ValueOf(a), "Allocation")
	require.Nil(t, AllocFromAPIWithoutJob(nil))

	withJob := filledAPIAlloc()
	withJob.Job = &api.Job{ID: new("web")}
	require.Nil(t, AllocFromAPIWithoutJob(withJob).Job, "the job is JobFromAPI's")
	require.NotNil(t, withJob.Job, "the input is not changed")
}

// reportedByHand is the conversion of a client's report the agent did by
// hand before AllocUpdateFromAPI.
func reportedByHand(t *testing.T, a *api.Allocation) *structs.Allocation {
	u := &structs.Allocation{ID: a.ID, ClientStatus: a.ClientStatus, ClientDescription: a.ClientDescription}
	jsonRoundTrip(t, a.TaskStates, &u.TaskStates)
	if a.DeploymentStatus != nil {
		u.DeploymentStatus = &structs.AllocDeploymentStatus{
			Healthy: a.DeploymentStatus.Healthy, Timestamp: a.DeploymentStatus.Timestamp, Canary: a.DeploymentStatus.Canary,
		}
	}
	if ns := a.NetworkStatus; ns != nil {
		u.NetworkStatus = &structs.AllocNetworkStatus{InterfaceName: ns.InterfaceName, Address: ns.Address, AddressIPv6: ns.AddressIPv6}
	}
	return u
}

func TestAllocUpdateFromAPI_KeepsWhatAClientMaySet(t *testing.T) {
	full := filledAPIAlloc()
	require.NotZero(t, full.DeploymentStatus.ModifyIndex)
	got := AllocUpdateFromAPI(full)
	require.Equal(t, reportedByHand(t, full), got)
	require.Zero(t, got.DeploymentStatus.ModifyIndex, "the server sets it")
	require.Empty(t, got.JobID)

	bare := &api.Allocation{ID: "a", ClientStatus: "running"}
	require.Equal(t, reportedByHand(t, bare), AllocUpdateFromAPI(bare))
	require.Nil(t, AllocUpdateFromAPI(nil))
}

// A client's report survives the trip through the wire: what
// AllocUpdateToAPI sends, AllocUpdateFromAPI reads back.
func TestAllocUpdate_RoundTrip(t *testing.T) {
	a := filled[structs.Allocation]()
	sent := AllocUpdateToAPI(a)
	raw, err := json.Marshal(sent)
	require.NoError(t, err)
	var received api.Allocation
	require.NoError(t, json.Unmarshal(raw, &received))
	got := AllocUpdateFromAPI(&received)
	want := &structs.Allocation{ID: a.ID, ClientStatus: a.ClientStatus, ClientDescription: a.ClientDescription,
		TaskStates: a.TaskStates, DeploymentStatus: a.DeploymentStatus, NetworkStatus: a.NetworkStatus}
	d := *want.DeploymentStatus
	d.ModifyIndex = 0
	want.DeploymentStatus = &d
	require.Equal(t, want, got)
}

func TestAllocMetricsToAPI_AsTheJSONRoundTrip(t *testing.T) {
	m := *filled[map[string]*structs.AllocationMetric]()
	m["none"] = nil
	var viaJSON map[string]*api.AllocationMetric
	jsonRoundTrip(t, m, &viaJSON)
	require.Equal(t, viaJSON, AllocMetricsToAPI(m))
	require.Equal(t, map[string]*api.AllocationMetric{}, AllocMetricsToAPI(map[string]*structs.AllocationMetric{}))
	require.Nil(t, AllocMetricsToAPI(nil))
}
