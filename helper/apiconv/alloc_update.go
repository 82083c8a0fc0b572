package apiconv

import (
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/nomad/structs"
)

// The allocations of the internal client protocol (wire.NodeAlloc,
// wire.AllocUpdateRequest) are api.Allocations; these convert them at the
// two ends, by field name like every other conversion here.

// AllocFromAPIWithoutJob converts an allocation a server sent its node,
// leaving out the job (convert it with JobFromAPI). It is the inverse of
// AllocToAPIWithoutJob for every field the two types share.
func AllocFromAPIWithoutJob(a *api.Allocation) *structs.Allocation {
	if a == nil {
		return nil
	}
	c := *a
	c.Job = nil
	return convertInto[structs.Allocation](&c)
}

// AllocUpdateToAPI keeps what a client reports about an allocation: its
// ID, client status and description, task states, deployment status and
// network status.
func AllocUpdateToAPI(a *structs.Allocation) *api.Allocation {
	full := AllocToAPI(&structs.Allocation{
		ID:                a.ID,
		ClientStatus:      a.ClientStatus,
		ClientDescription: a.ClientDescription,
		TaskStates:        a.TaskStates,
		DeploymentStatus:  a.DeploymentStatus,
		NetworkStatus:     a.NetworkStatus,
	})
	return &api.Allocation{
		ID:                full.ID,
		ClientStatus:      full.ClientStatus,
		ClientDescription: full.ClientDescription,
		TaskStates:        full.TaskStates,
		DeploymentStatus:  full.DeploymentStatus,
		NetworkStatus:     full.NetworkStatus,
	}
}

// AllocUpdateFromAPI keeps, of a client's report about an allocation, the
// fields a client may set: ID, client status and description, task states,
// the deployment health (Healthy, Timestamp, Canary: the server sets its
// ModifyIndex) and the network status. The caller checks ClientStatus.
func AllocUpdateFromAPI(a *api.Allocation) *structs.Allocation {
	if a == nil {
		return nil
	}
	u := convertInto[structs.Allocation](&api.Allocation{
		ID:                a.ID,
		ClientStatus:      a.ClientStatus,
		ClientDescription: a.ClientDescription,
		TaskStates:        a.TaskStates,
		DeploymentStatus:  a.DeploymentStatus,
		NetworkStatus:     a.NetworkStatus,
	})
	if u.DeploymentStatus != nil {
		u.DeploymentStatus.ModifyIndex = 0
	}
	return u
}

// AllocMetricsToAPI converts the placement failures of a plan or an
// evaluation, by task group.
func AllocMetricsToAPI(m map[string]*structs.AllocationMetric) map[string]*api.AllocationMetric {
	if m == nil {
		return nil
	}
	return *convertInto[map[string]*api.AllocationMetric](&m)
}
