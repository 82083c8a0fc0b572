package agent

import (
	"net/http"
	"strconv"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/helper/apiconv"
	"github.com/drover-project/drover/nomad"
	"github.com/drover-project/drover/nomad/structs"
)

// pageParams adds per_page and next_token to opts.
func pageParams(r *http.Request, opts *nomad.QueryOptions) error {
	q := r.URL.Query()
	if v := q.Get("per_page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return badRequest("Invalid per_page %q: must be a non-negative integer", v)
		}
		opts.PerPage = n
	}
	opts.NextToken = q.Get("next_token")
	return nil
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
	f, err := parseFilter(r)
	if err != nil {
		return nil, 0, err
	}
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	if err := pageParams(r, &opts); err != nil {
		return nil, 0, err
	}
	opts.Prefix = prefixParam(r)
	opts.Filter = filterOf(f, func(p *structs.NodePool) any { return nodePoolToAPI(p) })
	pools, meta, err := h.srv.NodePoolList(r.Context(), opts)
	if err != nil {
		return nil, metaIndex(meta), err
	}
	setNextToken(w, meta.NextToken)
	out := make([]*api.NodePool, 0, len(pools))
	for _, p := range pools {
		out = append(out, nodePoolToAPI(p))
	}
	return out, metaIndex(meta), nil
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
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	p, meta, err := h.srv.NodePoolGet(r.Context(), opts, r.PathValue("name"))
	if err != nil {
		return nil, metaIndex(meta), err
	}
	return nodePoolToAPI(p), metaIndex(meta), nil
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
	index, err := h.srv.UpsertNodePool(aclOf(r), pool)
	return nil, index, err
}

// nodePoolDelete serves DELETE /v1/node/pool/:name.
func (h *HTTPServer) nodePoolDelete(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	index, err := h.srv.DeleteNodePool(aclOf(r), r.PathValue("name"))
	return nil, index, err
}

// nodePoolNodes serves GET /v1/node/pool/:name/nodes: "all" has every node,
// "default" those that name no other pool.
func (h *HTTPServer) nodePoolNodes(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	if err := pageParams(r, &opts); err != nil {
		return nil, 0, err
	}
	nodes, meta, err := h.srv.NodePoolNodes(r.Context(), opts, r.PathValue("name"))
	if err != nil {
		return nil, metaIndex(meta), err
	}
	setNextToken(w, meta.NextToken)
	out := make([]*api.NodeListStub, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, apiconv.NodeStubToAPI(n))
	}
	return out, metaIndex(meta), nil
}

// nodePoolJobs serves GET /v1/node/pool/:name/jobs: the jobs of the
// namespace ("*": all) that run in the pool.
func (h *HTTPServer) nodePoolJobs(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	if err := pageParams(r, &opts); err != nil {
		return nil, 0, err
	}
	jobs, meta, err := h.srv.NodePoolJobs(r.Context(), opts, r.PathValue("name"))
	if err != nil {
		return nil, metaIndex(meta), err
	}
	setNextToken(w, meta.NextToken)
	out := make([]*api.JobListStub, 0, len(jobs))
	for _, e := range jobs {
		out = append(out, apiconv.JobStubToAPI(e.Job, e.Summary))
	}
	return out, metaIndex(meta), nil
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
