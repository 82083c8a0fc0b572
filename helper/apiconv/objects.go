package apiconv

import (
	"net"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/nomad/structs"
)

// Node attributes that NodeListStub reports as fields of their own.
const (
	attrNodeAddress = "unique.network.ip-address"
	attrNodeVersion = "nomad.version"
)

// AllocToAPI converts an allocation for `GET /v1/allocation/:id` and
// `/v1/node/:id/allocations`. The job version the allocation runs is embedded
// (alloc status reads it), Metrics is never nil, and the deprecated Resources
// is filled with the allocation's CPU, memory and disk (node status reads
// Resources.CPU/MemoryMB/DiskMB). The deprecated TaskResources is left out,
// so alloc status skips its per-task resource section instead of panicking.
func AllocToAPI(a *structs.Allocation) *api.Allocation {
	out := AllocToAPIWithoutJob(a)
	if out != nil {
		out.Job = JobToAPI(a.Job)
	}
	return out
}

// AllocToAPIWithoutJob is AllocToAPI with a nil Job, for callers that send
// the job on its own (JobJSON).
func AllocToAPIWithoutJob(a *structs.Allocation) *api.Allocation {
	if a == nil {
		return nil
	}
	c := *a
	c.Job = nil // not converted by name
	out := convertInto[api.Allocation](&c)
	if out.Metrics == nil {
		out.Metrics = &api.AllocationMetric{}
	}
	out.Resources = allocResources(a)
	return out
}

// allocResources sums what an allocation was granted, or, before the
// scheduler recorded that, what its task group asks for.
func allocResources(a *structs.Allocation) *api.Resources {
	var cpu, mem, memMax, disk int
	switch {
	case a.AllocatedResources != nil:
		for _, tr := range a.AllocatedResources.Tasks {
			if tr == nil {
				continue
			}
			cpu += int(tr.Cpu.CpuShares)
			mem += int(tr.Memory.MemoryMB)
			memMax += int(tr.Memory.MemoryMaxMB)
		}
		disk = int(a.AllocatedResources.Shared.DiskMB)
	case a.Job != nil:
		if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil {
			for _, t := range tg.Tasks {
				if t != nil && t.Resources != nil {
					cpu += t.Resources.CPU
					mem += t.Resources.MemoryMB
					memMax += t.Resources.MemoryMaxMB
				}
			}
			if tg.EphemeralDisk != nil {
				disk = tg.EphemeralDisk.SizeMB
			}
		}
	}
	return &api.Resources{CPU: &cpu, MemoryMB: &mem, MemoryMaxMB: &memMax, DiskMB: &disk}
}

// AllocStubToAPI converts an allocation for list endpoints. JobType comes
// from the embedded job. AllocatedResources is left out, as Nomad does unless
// the request asks for `resources=true` (use AllocatedResourcesToAPI then).
func AllocStubToAPI(a *structs.Allocation) *api.AllocationListStub {
	if a == nil {
		return nil
	}
	c := *a
	c.Job, c.AllocatedResources = nil, nil
	out := convertInto[api.AllocationListStub](&c)
	if a.Job != nil {
		out.JobType = a.Job.Type
	}
	out.JobVersion = a.JobVersion
	return out
}

// AllocatedResourcesToAPI converts what the scheduler granted an allocation.
func AllocatedResourcesToAPI(r *structs.AllocatedResources) *api.AllocatedResources {
	return convertInto[api.AllocatedResources](r)
}

// EvalToAPI converts an evaluation. FailedTGAllocs values are never nil (the
// CLI prints them). RelatedEvals is left for the handler (`related=true`).
func EvalToAPI(e *structs.Evaluation) *api.Evaluation {
	out := convertInto[api.Evaluation](e)
	if out == nil {
		return nil
	}
	for tg, m := range out.FailedTGAllocs {
		if m == nil {
			out.FailedTGAllocs[tg] = &api.AllocationMetric{}
		}
	}
	return out
}

// DeploymentToAPI converts a deployment. DeploymentState.AutoPromote has no
// api field and is not sent.
func DeploymentToAPI(d *structs.Deployment) *api.Deployment {
	return convertInto[api.Deployment](d)
}

// NodeToAPI converts a node for `GET /v1/node/:id`. NodeResources and
// ReservedResources are never nil (node status dereferences them); the
// SecretID is never included.
func NodeToAPI(n *structs.Node) *api.Node {
	if n == nil {
		return nil
	}
	c := *n
	c.SecretID = ""
	return convertInto[api.Node](&c)
}

// NodeFromAPI converts a node a client registers with (api.Node JSON). The
// api type has no SecretID: the caller sets it from the request.
func NodeFromAPI(n *api.Node) *structs.Node {
	return convertInto[structs.Node](n)
}

// NodeStubToAPI converts a node for `GET /v1/nodes`. Address and Version
// come from the node's fingerprinted attributes (falling back to the host of
// HTTPAddr for the address). Attributes and resources are left out, as Nomad
// does unless the request asks for `os=true` / `resources=true`.
func NodeStubToAPI(n *structs.Node) *api.NodeListStub {
	if n == nil {
		return nil
	}
	out := &api.NodeListStub{
		Address:               n.Attributes[attrNodeAddress],
		ID:                    n.ID,
		Datacenter:            n.Datacenter,
		Name:                  n.Name,
		NodeClass:             n.NodeClass,
		NodePool:              n.NodePool,
		Version:               n.Attributes[attrNodeVersion],
		Drain:                 n.Drain,
		SchedulingEligibility: n.SchedulingEligibility,
		Status:                n.Status,
		StatusDescription:     n.StatusDescription,
		CreateIndex:           n.CreateIndex,
		ModifyIndex:           n.ModifyIndex,
	}
	if out.Address == "" {
		if host, _, err := net.SplitHostPort(n.HTTPAddr); err == nil {
			out.Address = host
		}
	}
	if n.Drivers != nil {
		out.Drivers = *convertInto[map[string]*api.DriverInfo](&n.Drivers)
	}
	return out
}

// JobStubToAPI converts a job for `GET /v1/jobs`. JobSummary is never nil:
// the CLI reads JobSummary.Namespace to find the job. summary may be nil.
func JobStubToAPI(j *structs.Job, summary *structs.JobSummary) *api.JobListStub {
	if j == nil {
		return nil
	}
	out := &api.JobListStub{
		ID:                j.ID,
		ParentID:          j.ParentID,
		Name:              j.Name,
		Namespace:         j.Namespace,
		Datacenters:       append([]string(nil), j.Datacenters...),
		Type:              j.Type,
		Priority:          j.Priority,
		Periodic:          j.IsPeriodic(),
		ParameterizedJob:  j.IsParameterized(),
		Stop:              j.Stop,
		Status:            j.Status,
		StatusDescription: j.StatusDescription,
		CreateIndex:       j.CreateIndex,
		ModifyIndex:       j.ModifyIndex,
		JobModifyIndex:    j.JobModifyIndex,
		SubmitTime:        j.SubmitTime,
	}
	if len(j.Meta) > 0 {
		out.Meta = make(map[string]string, len(j.Meta))
		for k, v := range j.Meta {
			out.Meta[k] = v
		}
	}
	if summary == nil {
		summary = &structs.JobSummary{JobID: j.ID, Namespace: j.Namespace, CreateIndex: j.CreateIndex, ModifyIndex: j.ModifyIndex}
	}
	out.JobSummary = JobSummaryToAPI(summary)
	return out
}

// JobSummaryToAPI converts a job summary. Summary and Children are never nil.
func JobSummaryToAPI(s *structs.JobSummary) *api.JobSummary {
	out := convertInto[api.JobSummary](s)
	if out == nil {
		return nil
	}
	if out.Summary == nil {
		out.Summary = map[string]api.TaskGroupSummary{}
	}
	out.Children = &api.JobChildrenSummary{}
	return out
}

// JobDiffToAPI converts a job diff (`job plan`, `job history -p`).
func JobDiffToAPI(d *structs.JobDiff) *api.JobDiff {
	return convertInto[api.JobDiff](d)
}

// PlanAnnotationsToAPI converts a plan's annotations. DesiredTGUpdates is
// never nil (the CLI indexes it whenever the diff is not "None").
func PlanAnnotationsToAPI(p *structs.PlanAnnotations) *api.PlanAnnotations {
	out := convertInto[api.PlanAnnotations](p)
	if out == nil {
		return nil
	}
	if out.DesiredTGUpdates == nil {
		out.DesiredTGUpdates = map[string]*api.DesiredUpdates{}
	}
	return out
}
