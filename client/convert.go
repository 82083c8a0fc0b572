package client

import (
	"errors"
	"fmt"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/helper/apiconv"
	"github.com/drover-project/drover/nomad/structs"
)

// allocFromAPI converts an allocation the server sent: its own fields by
// name (apiconv.AllocFromAPIWithoutJob), the job through apiconv.JobFromAPI,
// which also checks every field of it.
func allocFromAPI(a *api.Allocation) (*structs.Allocation, error) {
	if a == nil || a.ID == "" {
		return nil, errors.New("allocation without an ID")
	}
	if a.Job == nil {
		return nil, fmt.Errorf("allocation %s has no job", a.ID)
	}
	out := apiconv.AllocFromAPIWithoutJob(a)
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
