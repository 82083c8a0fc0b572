package agent

import (
	"context"
	"net/http"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/helper/apiconv"
	"github.com/drover-project/drover/nomad"
	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/wire"
)

// The native service catalog's endpoints are thin: they decode, call the
// server (which checks the ACL in the namespace itself: read-job to read,
// submit-job to delete) and encode. Routes use the caller() rule for that
// reason.

// registerServiceRoutes adds /v1/services, /v1/service/{name}, the
// services of a job and of an allocation, and the clients' internal route.
func (h *HTTPServer) registerServiceRoutes(get, put, del func(string, authRule, handlerFunc)) {
	get("/v1/services", caller(), h.servicesList)
	get("/v1/service/{name}", caller(), h.serviceGet)
	del("/v1/service/{name}/{id}", caller(), h.serviceDelete)
	get("/v1/job/{id}/services", caller(), h.jobServices)
	get("/v1/allocation/{id}/services", caller(), h.allocServices)
	put(wire.RouteNodeServices, nodeSecret(), h.internalNodeServices)
}

// servicesList serves GET /v1/services (blocking): the services of the
// namespace ("*": of every namespace the token reads), grouped by namespace
// with their tags.
func (h *HTTPServer) servicesList(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	regs, meta, err := h.srv.ServiceList(r.Context(), opts)
	if err != nil {
		return nil, metaIndex(meta), err
	}
	return apiconv.ServiceRegistrationStubsToAPI(regs), metaIndex(meta), nil
}

// serviceGet serves GET /v1/service/{name} (blocking): its instances,
// narrowed by filter, every ?tag= and ?choose=<n>|<key>, paged by
// per_page and next_token.
func (h *HTTPServer) serviceGet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
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
	opts.Filter = filterOf(f, func(s *structs.ServiceRegistration) any { return apiconv.ServiceRegistrationToAPI(s) })
	q := r.URL.Query()
	get := nomad.ServiceGetOptions{Tags: q["tag"], Choose: q.Get("choose")}
	regs, meta, err := h.srv.ServiceGet(r.Context(), opts, r.PathValue("name"), get)
	if err != nil {
		return nil, metaIndex(meta), err
	}
	setNextToken(w, meta.NextToken)
	return registrationsToAPI(regs), metaIndex(meta), nil
}

// jobServices serves GET /v1/job/{id}/services (blocking).
func (h *HTTPServer) jobServices(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	return h.servicesOf(r, h.srv.ServicesOfJob)
}

// allocServices serves GET /v1/allocation/{id}/services (blocking).
func (h *HTTPServer) allocServices(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	return h.servicesOf(r, h.srv.ServicesOfAlloc)
}

// servicesOf answers with the registrations read returns for the
// object the path's {id} names.
func (h *HTTPServer) servicesOf(r *http.Request, read func(context.Context, nomad.QueryOptions, string) ([]*structs.ServiceRegistration, nomad.QueryMeta, error)) (any, uint64, error) {
	return serveByID(r, read, registrationsToAPI)
}

func registrationsToAPI(regs []*structs.ServiceRegistration) []*api.ServiceRegistration {
	out := make([]*api.ServiceRegistration, 0, len(regs))
	for _, s := range regs {
		out = append(out, apiconv.ServiceRegistrationToAPI(s))
	}
	return out
}

// serviceDelete serves DELETE /v1/service/{name}/{id}.
func (h *HTTPServer) serviceDelete(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	index, err := h.srv.ServiceDelete(opts, r.PathValue("name"), r.PathValue("id"))
	if err != nil {
		return nil, 0, err
	}
	return nil, index, nil
}

// internalNodeServices serves a client's PUT of its allocations'
// registrations (wire.RouteNodeServices).
func (h *HTTPServer) internalNodeServices(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req wire.NodeServicesRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	allocs := make([]nomad.AllocServices, 0, len(req.Allocs))
	for _, as := range req.Allocs {
		if as == nil {
			return nil, 0, badRequest("null allocation in the request")
		}
		s := nomad.AllocServices{AllocID: as.AllocID}
		for _, reg := range as.Services {
			s.Services = append(s.Services, apiconv.ServiceRegistrationFromAPI(reg))
		}
		allocs = append(allocs, s)
	}
	index, err := h.srv.NodeServicesSync(nodeCaller(r), allocs)
	if err != nil {
		return nil, 0, err
	}
	return &api.WriteMeta{LastIndex: index}, index, nil
}
