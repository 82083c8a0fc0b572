package client

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/helper/apiconv"
	"github.com/drover-project/drover/nomad/structs"
)

// allocFromAPI converts an allocation the server sent. The allocation's own
// fields go through a JSON round trip (the api and structs types share field
// names and shapes); the job goes through apiconv.JobFromAPI, which checks
// every field by name.
func allocFromAPI(a *api.Allocation) (*structs.Allocation, error) {
	if a == nil || a.ID == "" {
		return nil, errors.New("allocation without an ID")
	}
	if a.Job == nil {
		return nil, fmt.Errorf("allocation %s has no job", a.ID)
	}
	c := *a
	c.Job = nil
	raw, err := json.Marshal(&c)
	if err != nil {
		return nil, fmt.Errorf("allocation %s: encoding: %w", a.ID, err)
	}
	out := new(structs.Allocation)
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("allocation %s: decoding: %w", a.ID, err)
	}
	// JobFromAPI canonicalizes a.Job in place; the server's job is
	// canonical already, and a is the caller's to discard.
	job, _, err := apiconv.JobFromAPI(a.Job)
	if err != nil {
		return nil, fmt.Errorf("allocation %s: job: %w", a.ID, err)
	}
	out.Job = job
	if out.Job.LookupTaskGroup(out.TaskGroup) == nil {
		return nil, fmt.Errorf("allocation %s: job %q has no task group %q", a.ID, out.Job.ID, out.TaskGroup)
	}
	return out, nil
}

// allocUpdateToAPI keeps what a client reports about an allocation: its ID,
// client status and description, task states, deployment status and
// network status.
func allocUpdateToAPI(a *structs.Allocation) *api.Allocation {
	full := apiconv.AllocToAPI(&structs.Allocation{
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
