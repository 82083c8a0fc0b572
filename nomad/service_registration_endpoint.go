package nomad

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// The native service catalog (provider "nomad"): clients write the
// registrations of the services their allocations run (NodeServicesSync);
// callers with read-job in a namespace (a workload identity of it
// included) read them; submit-job deletes one. The state store drops an
// allocation's registrations when its client reports it over or it is
// collected, and a node's when it goes down or is deleted.

// ServiceList is every registration of the namespace the options name
// (AllNamespaces: of every namespace the caller may read), sorted by
// namespace, service name and ID, as a blocking query; its index is 0
// while no registration was ever written.
func (s *Server) ServiceList(ctx context.Context, opts QueryOptions) ([]*structs.ServiceRegistration, QueryMeta, error) {
	ns := opts.namespace()
	if err := requireNamespace(opts.ACL, ns, acl.NamespaceCapabilityReadJob); err != nil {
		return nil, s.refusedMeta(), err
	}
	var out []*structs.ServiceRegistration
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		regs, err := snap.ServiceRegistrations(ws, ns)
		if err != nil {
			return 0, err
		}
		out = filterByNamespace(opts.ACL, acl.NamespaceCapabilityReadJob, regs, registrationNamespace)
		return tableIndex(snap, state.TableServiceRegistrations), nil
	})
	return out, s.listIndex(meta, state.TableServiceRegistrations), err
}

// ServiceGetOptions narrow the instances of one service.
type ServiceGetOptions struct {
	// Tags keeps the instances that carry every tag listed.
	Tags []string
	// Choose, "<n>|<key>", keeps n instances chosen by rendezvous hashing
	// on key (structs.ChooseServices), after the filter and the tags.
	Choose string
}

// ServiceGet is the instances of service name in the namespace the
// options name, sorted by ID, as a blocking query: those opts.Filter (over
// the api form) accepts, then those with every tag, then the chosen ones,
// then the page opts.PerPage and opts.NextToken (an ID) ask for.
// An unknown service is an empty list; a malformed choose is a bad request.
func (s *Server) ServiceGet(ctx context.Context, opts QueryOptions, name string, get ServiceGetOptions) ([]*structs.ServiceRegistration, QueryMeta, error) {
	ns := opts.namespace()
	if ns == AllNamespaces {
		return nil, s.refusedMeta(), structs.BadRequestf("a service is read in one namespace, not %q", AllNamespaces)
	}
	if err := requireNamespace(opts.ACL, ns, acl.NamespaceCapabilityReadJob); err != nil {
		return nil, s.refusedMeta(), err
	}
	if _, err := structs.ChooseServices(nil, get.Choose); err != nil {
		return nil, s.refusedMeta(), structs.BadRequestf("%v", err)
	}
	var out []*structs.ServiceRegistration
	var next string
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		regs, err := snap.ServiceRegistrationsByName(ws, ns, name)
		if err != nil {
			return 0, err
		}
		regs, err = applyFilter(&opts, regs, func(r *structs.ServiceRegistration) any { return r })
		if err != nil {
			return 0, err
		}
		regs = withTags(regs, get.Tags)
		if regs, err = structs.ChooseServices(regs, get.Choose); err != nil {
			return 0, err
		}
		out, next = paginate(&opts, regs, func(r *structs.ServiceRegistration) string { return r.ID })
		return tableIndex(snap, state.TableServiceRegistrations), nil
	})
	meta.NextToken = next
	return out, meta, err
}

// withTags keeps the registrations that carry every tag of tags.
func withTags(regs []*structs.ServiceRegistration, tags []string) []*structs.ServiceRegistration {
	if len(tags) == 0 {
		return regs
	}
	out := make([]*structs.ServiceRegistration, 0, len(regs))
	for _, r := range regs {
		all := true
		for _, t := range tags {
			all = all && slices.Contains(r.Tags, t)
		}
		if all {
			out = append(out, r)
		}
	}
	return out
}

// ServiceDelete deletes registration id of service name in the namespace
// the options name (submit-job there). A registration that does not exist
// (or is of another service) is not found.
func (s *Server) ServiceDelete(opts QueryOptions, name, id string) (uint64, error) {
	ns := opts.namespace()
	if err := requireNamespace(opts.ACL, ns, acl.NamespaceCapabilitySubmitJob); err != nil {
		return 0, err
	}
	reg, err := s.State().ServiceRegistrationByID(nil, ns, id)
	if err != nil {
		return 0, err
	}
	if reg == nil || reg.ServiceName != name {
		return 0, structs.NotFoundf("service registration not found")
	}
	_, index, err := s.raftApply(structs.ServiceRegistrationDeleteRequestType, &structs.ServiceRegistrationDeleteRequest{IDs: []string{id}})
	return index, err
}

// AllocServices is what a client says of one of its allocations: the
// registrations it advertises now (none: it advertises nothing).
type AllocServices struct {
	AllocID  string
	Services []*structs.ServiceRegistration
}

// NodeServicesSync makes the catalog hold, for each allocation listed
// (every one of node nodeID's), exactly the registrations given: the
// others of the allocation are deleted, new or changed ones written. The
// server fills in what it knows (namespace, job, node, datacenter); the
// client names the service, its tags, address and port, and an ID of the
// allocation's own form. An allocation already over on its node or
// collected, or a node that is down, registers nothing; an allocation of
// another node is a bad request. It returns the index the catalog is
// current at.
func (s *Server) NodeServicesSync(caller NodeCaller, allocs []AllocServices) (uint64, error) {
	if _, err := s.authenticateNode(caller); err != nil {
		return 0, err
	}
	nodeID := caller.NodeID
	snap := s.State().Snapshot()
	node, err := snap.NodeByID(nil, nodeID)
	if err != nil {
		return 0, err
	}
	if node == nil {
		return 0, structs.NotFoundf("node not found")
	}
	var del structs.ServiceRegistrationDeleteRequest
	var up structs.ServiceRegistrationUpsertRequest
	for _, as := range allocs {
		a, err := snap.AllocByID(nil, as.AllocID)
		if err != nil {
			return 0, err
		}
		if a == nil {
			continue // collected: its registrations went with it
		}
		if a.NodeID != nodeID {
			return 0, structs.BadRequestf("allocation %q does not belong to node %q", as.AllocID, nodeID)
		}
		want := map[string]*structs.ServiceRegistration{}
		if !a.ClientTerminal() && node.Status != structs.NodeStatusDown {
			for _, r := range as.Services {
				reg, err := registrationOf(a, node, r)
				if err != nil {
					return 0, err
				}
				want[reg.ID] = reg
			}
		}
		have, err := snap.ServiceRegistrationsByAlloc(nil, a.ID)
		if err != nil {
			return 0, err
		}
		for _, h := range have {
			if w, ok := want[h.ID]; ok && w.SameAs(h) {
				delete(want, h.ID)
			} else if !ok {
				del.IDs = append(del.IDs, h.ID)
			}
		}
		for _, id := range slices.Sorted(maps.Keys(want)) {
			up.Services = append(up.Services, want[id])
		}
	}
	index := s.State().LatestIndex()
	if len(del.IDs) > 0 {
		if _, index, err = s.raftApply(structs.ServiceRegistrationDeleteRequestType, &del); err != nil {
			return 0, err
		}
	}
	if len(up.Services) > 0 {
		if _, index, err = s.raftApply(structs.ServiceRegistrationUpsertRequestType, &up); err != nil {
			return 0, err
		}
	}
	return index, nil
}

// registrationOf is r as allocation a on node registers it: the server's
// fields filled in, the ID checked to be of a's form.
func registrationOf(a *structs.Allocation, node *structs.Node, r *structs.ServiceRegistration) (*structs.ServiceRegistration, error) {
	if r == nil || r.ServiceName == "" {
		return nil, structs.BadRequestf("allocation %q: a service registration needs a service name", a.ID)
	}
	if !strings.HasPrefix(r.ID, "_nomad-task-"+a.ID+"-") {
		return nil, structs.BadRequestf("allocation %q: service registration ID %q is not of the allocation", a.ID, r.ID)
	}
	if r.Port < 0 || r.Port > 65535 {
		return nil, structs.BadRequestf("allocation %q: service %q: port %d is out of range", a.ID, r.ServiceName, r.Port)
	}
	return &structs.ServiceRegistration{
		ID: r.ID, ServiceName: r.ServiceName, Namespace: a.Namespace, NodeID: node.ID,
		Datacenter: node.Datacenter, JobID: a.JobID, AllocID: a.ID, Tags: slices.Clone(r.Tags),
		Address: r.Address, Port: r.Port,
	}, nil
}

func registrationNamespace(r *structs.ServiceRegistration) string { return r.Namespace }

// ServicesOfJob is the registrations of job jobID in the namespace the
// options name (read-job there), sorted by ID, as a blocking query; an
// unknown job is not found.
func (s *Server) ServicesOfJob(ctx context.Context, opts QueryOptions, jobID string) ([]*structs.ServiceRegistration, QueryMeta, error) {
	ns := opts.namespace()
	if err := requireNamespace(opts.ACL, ns, acl.NamespaceCapabilityReadJob); err != nil {
		return nil, s.refusedMeta(), err
	}
	var out []*structs.ServiceRegistration
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		job, err := snap.JobByID(ws, ns, jobID)
		if err != nil {
			return 0, err
		}
		if job == nil {
			return tableIndex(snap, state.TableJobs), structs.NotFoundf("job not found")
		}
		out, err = snap.ServiceRegistrationsByJob(ws, ns, jobID)
		slices.SortFunc(out, byRegistrationID)
		return tableIndex(snap, state.TableJobs, state.TableServiceRegistrations), err
	})
	return out, meta, err
}

// ServicesOfAlloc is the registrations of allocation allocID (read-job in
// its namespace), sorted by ID, as a blocking query; an unknown allocation
// is not found.
func (s *Server) ServicesOfAlloc(ctx context.Context, opts QueryOptions, allocID string) ([]*structs.ServiceRegistration, QueryMeta, error) {
	a, err := s.State().AllocByID(nil, allocID)
	if err != nil {
		return nil, s.refusedMeta(), err
	}
	if a == nil {
		return nil, s.refusedMeta(), structs.NotFoundf("alloc not found")
	}
	if err := requireNamespace(opts.ACL, a.Namespace, acl.NamespaceCapabilityReadJob); err != nil {
		return nil, s.refusedMeta(), err
	}
	var out []*structs.ServiceRegistration
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		out, err = snap.ServiceRegistrationsByAlloc(ws, allocID)
		slices.SortFunc(out, byRegistrationID)
		return tableIndex(snap, state.TableServiceRegistrations), err
	})
	return out, meta, err
}

func byRegistrationID(a, b *structs.ServiceRegistration) int { return strings.Compare(a.ID, b.ID) }
