package agent

import (
	"net/http"
	"strconv"

	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/helper/apiconv"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// paginate returns the page of items (sorted by key) that starts at the
// next_token parameter and holds at most per_page items (0: all), and the
// token of the next page ("" when none), which the caller sends in
// X-Nomad-NextToken.
func paginate[T any](r *http.Request, items []T, key func(T) string) ([]T, string, error) {
	q := r.URL.Query()
	perPage := 0
	if v := q.Get("per_page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, "", badRequest("Invalid per_page %q: must be a non-negative integer", v)
		}
		perPage = n
	}
	start := 0
	if tok := q.Get("next_token"); tok != "" {
		for start < len(items) && key(items[start]) < tok {
			start++
		}
	}
	items = items[start:]
	if perPage == 0 || len(items) <= perPage {
		return items, "", nil
	}
	return items[:perPage], key(items[perPage]), nil
}

func nodePoolToAPI(p *structs.NodePool) *api.NodePool {
	out := &api.NodePool{Name: p.Name, Description: p.Description, Meta: p.Meta,
		NodeIdentityTTL: p.NodeIdentityTTL, CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex}
	if sc := p.SchedulerConfiguration; sc != nil {
		out.SchedulerConfiguration = &api.NodePoolSchedulerConfiguration{
			SchedulerAlgorithm:            api.SchedulerAlgorithm(sc.SchedulerAlgorithm),
			MemoryOversubscriptionEnabled: sc.MemoryOversubscriptionEnabled,
		}
	}
	return out
}

// nodePoolsList serves GET /v1/node/pools (prefix, per_page, next_token).
func (h *HTTPServer) nodePoolsList(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	prefix := prefixParam(r)
	f, err := parseFilter(r)
	if err != nil {
		return nil, 0, err
	}
	return h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		pools, err := snap.NodePools(ws, prefix)
		if err != nil {
			return nil, 0, err
		}
		if f.eval != nil {
			var kept []*structs.NodePool
			for _, p := range pools {
				ok, err := applyFilter(f, []*api.NodePool{nodePoolToAPI(p)})
				if err != nil {
					return nil, 0, err
				}
				if len(ok) == 1 {
					kept = append(kept, p)
				}
			}
			pools = kept
		}
		page, next, err := paginate(r, pools, func(p *structs.NodePool) string { return p.Name })
		if err != nil {
			return nil, 0, err
		}
		setNextToken(w, next)
		out := make([]*api.NodePool, 0, len(page))
		for _, p := range page {
			out = append(out, nodePoolToAPI(p))
		}
		return out, tableIndex(snap, state.TableNodePools), nil
	})
}

// setNextToken sets (or clears) X-Nomad-NextToken.
func setNextToken(w http.ResponseWriter, next string) {
	if next == "" {
		w.Header().Del("X-Nomad-NextToken")
		return
	}
	w.Header().Set("X-Nomad-NextToken", next)
}

// nodePoolGet serves GET /v1/node/pool/:name.
func (h *HTTPServer) nodePoolGet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	name := r.PathValue("name")
	return h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		p, err := snap.NodePoolByName(ws, name)
		if err != nil {
			return nil, 0, err
		}
		if p == nil {
			return nil, tableIndex(snap, state.TableNodePools), notFound("node pool not found")
		}
		return nodePoolToAPI(p), max(p.ModifyIndex, 1), nil
	})
}

// nodePoolsRegister serves PUT /v1/node/pools.
func (h *HTTPServer) nodePoolsRegister(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var in *api.NodePool
	if err := decodeBody(r, &in); err != nil {
		return nil, 0, err
	}
	var pool *structs.NodePool
	if in != nil {
		pool = &structs.NodePool{Name: in.Name, Description: in.Description, Meta: in.Meta,
			NodeIdentityTTL: in.NodeIdentityTTL}
		if sc := in.SchedulerConfiguration; sc != nil {
			pool.SchedulerConfiguration = &structs.NodePoolSchedulerConfiguration{
				SchedulerAlgorithm: string(sc.SchedulerAlgorithm), MemoryOversubscriptionEnabled: sc.MemoryOversubscriptionEnabled}
		}
	}
	index, err := h.srv.UpsertNodePool(pool)
	return nil, index, err
}

// nodePoolDelete serves DELETE /v1/node/pool/:name.
func (h *HTTPServer) nodePoolDelete(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	index, err := h.srv.DeleteNodePool(r.PathValue("name"))
	return nil, index, err
}

// nodePoolNodes serves GET /v1/node/pool/:name/nodes: "all" has every node,
// "default" those that name no other pool.
func (h *HTTPServer) nodePoolNodes(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	name := r.PathValue("name")
	return h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		p, err := snap.NodePoolByName(ws, name)
		if err != nil {
			return nil, 0, err
		}
		if p == nil {
			return nil, tableIndex(snap, state.TableNodePools), notFound("node pool not found")
		}
		nodes, err := snap.Nodes(ws)
		if err != nil {
			return nil, 0, err
		}
		var in []*structs.Node
		for _, n := range nodes {
			pool := n.NodePool
			if pool == "" {
				pool = structs.NodePoolDefault
			}
			if name == structs.NodePoolAll || pool == name {
				in = append(in, n)
			}
		}
		page, next, err := paginate(r, in, func(n *structs.Node) string { return n.ID })
		if err != nil {
			return nil, 0, err
		}
		setNextToken(w, next)
		out := make([]*api.NodeListStub, 0, len(page))
		for _, n := range page {
			out = append(out, apiconv.NodeStubToAPI(n))
		}
		return out, tableIndex(snap, state.TableNodes, state.TableNodePools), nil
	})
}

// nodePoolJobs serves GET /v1/node/pool/:name/jobs: the jobs of the
// namespace ("*": all) that run in the pool.
func (h *HTTPServer) nodePoolJobs(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	name, ns := r.PathValue("name"), namespace(r)
	return h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		p, err := snap.NodePoolByName(ws, name)
		if err != nil {
			return nil, 0, err
		}
		if p == nil {
			return nil, tableIndex(snap, state.TableNodePools), notFound("node pool not found")
		}
		jobs, err := snap.Jobs(ws, ns)
		if err != nil {
			return nil, 0, err
		}
		var in []*structs.Job
		for _, j := range jobs {
			pool := j.NodePool
			if pool == "" {
				pool = structs.NodePoolDefault
			}
			if pool == name {
				in = append(in, j)
			}
		}
		page, next, err := paginate(r, in, func(j *structs.Job) string { return j.Namespace + "." + j.ID })
		if err != nil {
			return nil, 0, err
		}
		setNextToken(w, next)
		out := make([]*api.JobListStub, 0, len(page))
		for _, j := range page {
			sum, err := snap.JobSummaryByID(ws, j.Namespace, j.ID)
			if err != nil {
				return nil, 0, err
			}
			out = append(out, apiconv.JobStubToAPI(j, sum))
		}
		return out, tableIndex(snap, state.TableJobs, state.TableNodePools), nil
	})
}

// nodePoolPrefix is the path prefix the pools mux serves.
const nodePoolPrefix = "/v1/node/pool/"

// registerNodePoolRoutes fills the pools mux.
func (h *HTTPServer) registerNodePoolRoutes() {
	m := h.pools
	route := func(method, path string, rule authRule, hf http.HandlerFunc) {
		// Listed in the route table (and so in its ACL test) like the
		// main mux's routes.
		h.routes = append(h.routes, registeredRoute{method: method, path: path, rule: rule})
		m.HandleFunc(method+" "+path, hf)
	}
	route("GET", nodePoolPrefix+"{name}", nodeRead(), h.read(h.authorize(nodeRead(), h.nodePoolGet)))
	route("DELETE", nodePoolPrefix+"{name}", management(), h.write(h.authorize(management(), h.nodePoolDelete)))
	route("GET", nodePoolPrefix+"{name}/nodes", nodeRead(), h.read(h.authorize(nodeRead(), h.nodePoolNodes)))
	route("GET", nodePoolPrefix+"{name}/jobs", nodeRead(), h.read(h.authorize(nodeRead(), h.nodePoolJobs)))
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Invalid URL path: "+r.URL.Path, http.StatusNotFound)
	})
}
