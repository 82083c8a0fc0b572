package agent

import "net/http"

// systemGC forces a garbage collection on the leader (`PUT
// /v1/system/gc`, `drover system gc`): every terminal evaluation,
// allocation and deployment, stopped job and down node the collector's
// safety rules allow goes now, whatever its age.
func (h *HTTPServer) systemGC(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	if _, err := h.srv.SystemGC(aclOf(r)); err != nil {
		return nil, 0, err
	}
	return nil, h.srv.State().LatestIndex(), nil
}
