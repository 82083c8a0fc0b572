package agent

import (
	"net/http"
	"sort"
	"strings"

	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/helper/apiconv"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// Evaluations, allocations, deployments and nodes: lists with prefix
// look-ups and single-object reads. Single objects are found by ID whatever
// the namespace parameter says (the CLI sends the user's namespace, not the
// object's).

// evalsList serves GET /v1/evaluations: prefix, filter, then the page
// (per_page, next_token, reverse; see pageEvals).
func (h *HTTPServer) evalsList(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	ns, prefix := namespace(r), prefixParam(r)
	f, err := parseFilter(r)
	if err != nil {
		return nil, 0, err
	}
	out, index, err := h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		var evals []*structs.Evaluation
		var err error
		if prefix != "" {
			evals, err = snap.EvalsByIDPrefix(ws, ns, prefix)
		} else {
			evals, err = snap.Evals(ws, ns)
		}
		if err != nil {
			return nil, 0, err
		}
		evals = filterByNS(r, acl.NamespaceCapabilityReadJob, evals, func(e *structs.Evaluation) string { return e.Namespace })
		if f.eval != nil {
			kept := evals[:0:0]
			for _, e := range evals {
				ok, err := applyFilter(f, []*api.Evaluation{apiconv.EvalToAPI(e)})
				if err != nil {
					return nil, 0, err
				}
				if len(ok) == 1 {
					kept = append(kept, e)
				}
			}
			evals = kept
		}
		page, next, err := pageEvals(r, evals, prefix != "")
		if err != nil {
			return nil, 0, err
		}
		setNextToken(w, next)
		out := make([]*api.Evaluation, 0, len(page))
		for _, e := range page {
			out = append(out, apiconv.EvalToAPI(e))
		}
		return out, tableIndex(snap, state.TableEvals), nil
	})
	return out, h.listIndex(index, state.TableEvals), err
}

func (h *HTTPServer) evalGet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	id := r.PathValue("id")
	return h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		e, err := snap.EvalByID(ws, id)
		if err != nil {
			return nil, 0, err
		}
		if e == nil {
			return nil, tableIndex(snap, state.TableEvals), notFound("eval not found")
		}
		out := apiconv.EvalToAPI(e)
		if r.URL.Query().Get("related") == "true" {
			related, err := relatedEvals(snap, ws, e)
			if err != nil {
				return nil, 0, err
			}
			out.RelatedEvals = related
		}
		return out, e.ModifyIndex, nil
	})
}

// relatedEvals returns, as stubs sorted by CreateIndex, the evaluations
// linked to e through NextEval, PreviousEval and BlockedEval, transitively
// (e itself excluded; an empty list, not nil, when there are none).
func relatedEvals(snap *state.Snapshot, ws memdb.WatchSet, e *structs.Evaluation) ([]*api.EvaluationStub, error) {
	seen := map[string]bool{e.ID: true}
	queue := []*structs.Evaluation{e}
	var found []*structs.Evaluation
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, id := range []string{cur.NextEval, cur.PreviousEval, cur.BlockedEval} {
			if id == "" || seen[id] {
				continue
			}
			seen[id] = true
			linked, err := snap.EvalByID(ws, id)
			if err != nil {
				return nil, err
			}
			if linked != nil {
				found = append(found, linked)
				queue = append(queue, linked)
			}
		}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].CreateIndex < found[j].CreateIndex })
	out := make([]*api.EvaluationStub, 0, len(found))
	for _, x := range found {
		out = append(out, &api.EvaluationStub{
			ID: x.ID, Priority: x.Priority, Type: x.Type, TriggeredBy: x.TriggeredBy, Namespace: x.Namespace,
			JobID: x.JobID, NodeID: x.NodeID, DeploymentID: x.DeploymentID, Status: x.Status,
			StatusDescription: x.StatusDescription, WaitUntil: x.WaitUntil, NextEval: x.NextEval,
			PreviousEval: x.PreviousEval, BlockedEval: x.BlockedEval, CreateIndex: x.CreateIndex,
			ModifyIndex: x.ModifyIndex, CreateTime: x.CreateTime, ModifyTime: x.ModifyTime,
		})
	}
	return out, nil
}

func (h *HTTPServer) evalAllocations(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	id := r.PathValue("id")
	out, index, err := h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		allocs, err := snap.AllocsByEval(ws, id)
		if err != nil {
			return nil, 0, err
		}
		return allocStubs(allocs), tableIndex(snap, state.TableAllocs), nil
	})
	return out, h.listIndex(index, state.TableAllocs), err
}

// allocsList serves GET /v1/allocations: stubs, with AllocatedResources
// when resources=true and without TaskStates when task_states=false.
func (h *HTTPServer) allocsList(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	ns, prefix := namespace(r), prefixParam(r)
	f, err := parseFilter(r)
	if err != nil {
		return nil, 0, err
	}
	withResources, err := boolParam(r, "resources", false)
	if err != nil {
		return nil, 0, err
	}
	withTaskStates, err := boolParam(r, "task_states", true)
	if err != nil {
		return nil, 0, err
	}
	out, index, err := h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		var allocs []*structs.Allocation
		var err error
		if prefix != "" {
			allocs, err = snap.AllocsByIDPrefix(ws, ns, prefix)
		} else {
			allocs, err = snap.Allocs(ws)
			allocs = filterNamespace(allocs, ns)
		}
		if err != nil {
			return nil, 0, err
		}
		allocs = filterByNS(r, acl.NamespaceCapabilityReadJob, allocs, allocNamespace)
		stubs := allocStubs(allocs)
		for i, st := range stubs {
			if withResources {
				st.AllocatedResources = apiconv.AllocatedResourcesToAPI(allocs[i].AllocatedResources)
			}
			if !withTaskStates {
				st.TaskStates = nil
			}
		}
		stubs, err = applyFilter(f, stubs)
		return stubs, tableIndex(snap, state.TableAllocs), err
	})
	return out, h.listIndex(index, state.TableAllocs), err
}

func allocNamespace(a *structs.Allocation) string { return a.Namespace }

func filterNamespace(allocs []*structs.Allocation, ns string) []*structs.Allocation {
	if ns == "*" {
		return allocs
	}
	var out []*structs.Allocation
	for _, a := range allocs {
		if a.Namespace == ns {
			out = append(out, a)
		}
	}
	return out
}

func (h *HTTPServer) allocGet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	id := r.PathValue("id")
	return h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		a, err := snap.AllocByID(ws, id)
		if err != nil {
			return nil, 0, err
		}
		if a == nil {
			return nil, tableIndex(snap, state.TableAllocs), notFound("alloc not found")
		}
		return apiconv.AllocToAPI(a), a.ModifyIndex, nil
	})
}

func (h *HTTPServer) deploymentsList(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	ns, prefix := namespace(r), uuidPrefix(prefixParam(r))
	f, err := parseFilter(r)
	if err != nil {
		return nil, 0, err
	}
	return h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		var ds []*structs.Deployment
		var err error
		if prefix != "" {
			ds, err = snap.DeploymentsByIDPrefix(ws, ns, prefix)
		} else {
			ds, err = snap.Deployments(ws, ns)
		}
		if err != nil {
			return nil, 0, err
		}
		ds = filterByNS(r, acl.NamespaceCapabilityReadJob, ds, func(d *structs.Deployment) string { return d.Namespace })
		out, err := applyFilter(f, deploymentsToAPI(ds))
		return out, tableIndex(snap, state.TableDeployments), err
	})
}

func (h *HTTPServer) deploymentGet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	id := r.PathValue("id")
	return h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		d, err := snap.DeploymentByID(ws, id)
		if err != nil {
			return nil, 0, err
		}
		if d == nil {
			return nil, tableIndex(snap, state.TableDeployments), notFound("deployment not found")
		}
		return apiconv.DeploymentToAPI(d), d.ModifyIndex, nil
	})
}

func (h *HTTPServer) deploymentAllocations(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	id := r.PathValue("id")
	return h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		allocs, err := snap.AllocsByDeployment(ws, id)
		if err != nil {
			return nil, 0, err
		}
		return allocStubs(allocs), tableIndex(snap, state.TableAllocs), nil
	})
}

func (h *HTTPServer) nodesList(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	prefix := prefixParam(r)
	withResources, err := boolParam(r, "resources", false)
	if err != nil {
		return nil, 0, err
	}
	withOS, err := boolParam(r, "os", false)
	if err != nil {
		return nil, 0, err
	}
	f, err := parseFilter(r)
	if err != nil {
		return nil, 0, err
	}
	return h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		var nodes []*structs.Node
		var err error
		if prefix != "" {
			nodes, err = snap.NodesByIDPrefix(ws, prefix)
		} else {
			nodes, err = snap.Nodes(ws)
		}
		if err != nil {
			return nil, 0, err
		}
		out := make([]*api.NodeListStub, 0, len(nodes))
		for _, n := range nodes {
			stub := apiconv.NodeStubToAPI(n)
			if withResources || withOS {
				full := apiconv.NodeToAPI(n)
				if withResources {
					stub.NodeResources, stub.ReservedResources = full.NodeResources, full.ReservedResources
				}
				if withOS {
					stub.Attributes = map[string]string{"os.name": n.Attributes["os.name"]}
				}
			}
			out = append(out, stub)
		}
		out, err = applyFilter(f, out)
		return out, tableIndex(snap, state.TableNodes), err
	})
}

func (h *HTTPServer) nodeGet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	id := r.PathValue("id")
	return h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		n, err := snap.NodeByID(ws, id)
		if err != nil {
			return nil, 0, err
		}
		if n == nil {
			return nil, tableIndex(snap, state.TableNodes), notFound("node not found")
		}
		return nodeToWire(n), n.ModifyIndex, nil
	})
}

func (h *HTTPServer) nodeAllocations(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	id := r.PathValue("id")
	return h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		allocs, err := snap.AllocsByNode(ws, id)
		if err != nil {
			return nil, 0, err
		}
		allocs = filterByNS(r, acl.NamespaceCapabilityReadJob, allocs, allocNamespace)
		out := make([]*api.Allocation, 0, len(allocs))
		for _, a := range allocs {
			out = append(out, apiconv.AllocToAPI(a))
		}
		return out, tableIndex(snap, state.TableAllocs), nil
	})
}

// uuidPrefix puts the hyphens back into a UUID prefix sent without them (the
// CLI strips hyphens from deployment prefixes).
func uuidPrefix(p string) string {
	if strings.Contains(p, "-") {
		return p
	}
	var b strings.Builder
	for i, c := range p {
		if i == 8 || i == 12 || i == 16 || i == 20 {
			b.WriteByte('-')
		}
		b.WriteRune(c)
	}
	return b.String()
}
