package apiconv

import (
	"slices"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/nomad/structs"
)

// ServiceRegistrationToAPI converts a registration of the native service
// catalog to its wire form (nil for nil).
func ServiceRegistrationToAPI(r *structs.ServiceRegistration) *api.ServiceRegistration {
	if r == nil {
		return nil
	}
	return &api.ServiceRegistration{
		ID: r.ID, ServiceName: r.ServiceName, Namespace: r.Namespace, NodeID: r.NodeID,
		Datacenter: r.Datacenter, JobID: r.JobID, AllocID: r.AllocID, Tags: slices.Clone(r.Tags),
		Address: r.Address, Port: r.Port, CreateIndex: r.CreateIndex, ModifyIndex: r.ModifyIndex,
	}
}

// ServiceRegistrationFromAPI converts a registration's wire form (nil for
// nil).
func ServiceRegistrationFromAPI(r *api.ServiceRegistration) *structs.ServiceRegistration {
	if r == nil {
		return nil
	}
	return &structs.ServiceRegistration{
		ID: r.ID, ServiceName: r.ServiceName, Namespace: r.Namespace, NodeID: r.NodeID,
		Datacenter: r.Datacenter, JobID: r.JobID, AllocID: r.AllocID, Tags: slices.Clone(r.Tags),
		Address: r.Address, Port: r.Port, CreateIndex: r.CreateIndex, ModifyIndex: r.ModifyIndex,
	}
}

// ServiceRegistrationStubsToAPI groups registrations (sorted by namespace
// and service name) into the list form of GET /v1/services: per namespace
// its services, each with the union of its instances' tags, sorted and
// without duplicates.
func ServiceRegistrationStubsToAPI(regs []*structs.ServiceRegistration) []*api.ServiceRegistrationListStub {
	out := []*api.ServiceRegistrationListStub{}
	var cur *api.ServiceRegistrationListStub
	var svc *api.ServiceRegistrationStub
	for _, r := range regs {
		if cur == nil || cur.Namespace != r.Namespace {
			cur = &api.ServiceRegistrationListStub{Namespace: r.Namespace, Services: []*api.ServiceRegistrationStub{}}
			out = append(out, cur)
			svc = nil
		}
		if svc == nil || svc.ServiceName != r.ServiceName {
			svc = &api.ServiceRegistrationStub{ServiceName: r.ServiceName, Tags: []string{}}
			cur.Services = append(cur.Services, svc)
		}
		for _, t := range r.Tags {
			if !slices.Contains(svc.Tags, t) {
				svc.Tags = append(svc.Tags, t)
			}
		}
	}
	for _, ns := range out {
		for _, s := range ns.Services {
			slices.Sort(s.Tags)
		}
	}
	return out
}
