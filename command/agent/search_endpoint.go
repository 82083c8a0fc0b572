package agent

import (
	"net/http"

	"github.com/hashicorp/nomad/api"
	"github.com/hashicorp/nomad/api/contexts"

	"github.com/drover-project/drover/nomad/search"
)

// searchPrefix serves /v1/search: IDs starting with Prefix, per Context.
func (h *HTTPServer) searchPrefix(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req api.SearchRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	ctx := string(req.Context)
	if !search.ValidContext(ctx) {
		return nil, 0, badRequest("Context: %q is not a search context", ctx)
	}
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	opts.Namespace = searchNamespace(r, req.QueryOptions)
	m, t, meta, err := h.srv.SearchPrefix(r.Context(), opts, req.Prefix, ctx)
	if err != nil {
		return nil, metaIndex(meta), err
	}
	out := &api.SearchResponse{Matches: map[contexts.Context][]string{}, Truncations: map[contexts.Context]bool{}}
	for c, ids := range m {
		out.Matches[contexts.Context(c)] = ids
		out.Truncations[contexts.Context(c)] = t[c]
	}
	return out, metaIndex(meta), nil
}

// searchFuzzy serves /v1/search/fuzzy: names, images and commands
// containing Text, per Context.
func (h *HTTPServer) searchFuzzy(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req api.FuzzySearchRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	ctx := string(req.Context)
	if !search.ValidContext(ctx) {
		return nil, 0, badRequest("Context: %q is not a search context", ctx)
	}
	if len(req.Text) < search.MinFuzzyLength {
		return nil, 0, badRequest("Text: fuzzy search query must be at least %d characters, got %d", search.MinFuzzyLength, len(req.Text))
	}
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	opts.Namespace = searchNamespace(r, req.QueryOptions)
	m, t, meta, err := h.srv.SearchFuzzy(r.Context(), opts, req.Text, ctx)
	if err != nil {
		return nil, metaIndex(meta), err
	}
	out := &api.FuzzySearchResponse{Matches: map[contexts.Context][]api.FuzzyMatch{}, Truncations: map[contexts.Context]bool{}}
	for c, list := range m {
		ms := make([]api.FuzzyMatch, 0, len(list))
		for _, x := range list {
			ms = append(ms, api.FuzzyMatch{ID: x.ID, Scope: x.Scope})
		}
		out.Matches[contexts.Context(c)] = ms
		out.Truncations[contexts.Context(c)] = t[c]
	}
	return out, metaIndex(meta), nil
}

// searchNamespace is the namespace of a search: the query parameter, else
// the body's, else "default".
func searchNamespace(r *http.Request, q api.QueryOptions) string {
	if ns := r.URL.Query().Get("namespace"); ns != "" {
		return ns
	}
	if q.Namespace != "" {
		return q.Namespace
	}
	return "default"
}
