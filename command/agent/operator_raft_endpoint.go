package agent

import (
	"net/http"

	"github.com/hashicorp/nomad/api"
)

// operatorRaftConfiguration serves GET /v1/operator/raft/configuration.
func (h *HTTPServer) operatorRaftConfiguration(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	peers, index, err := h.srv.RaftConfiguration(aclOf(r))
	if err != nil {
		return nil, 0, err
	}
	out := &api.RaftConfiguration{Index: index, Servers: []*api.RaftServer{}}
	for _, p := range peers {
		out.Servers = append(out.Servers, &api.RaftServer{
			ID: p.ID, Node: p.ID, Address: p.Address, Leader: p.Leader, Voter: p.Voter, RaftProtocol: "3",
		})
	}
	return out, index, nil
}

// operatorRaftRemovePeer serves DELETE /v1/operator/raft/peer?id=|address=.
func (h *HTTPServer) operatorRaftRemovePeer(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	q := r.URL.Query()
	id, addr := q.Get("id"), q.Get("address")
	switch {
	case id == "" && addr == "":
		return nil, 0, badRequest("Must specify either ?id with the server's ID or ?address with IP:port of peer to remove")
	case id != "" && addr != "":
		return nil, 0, badRequest("Must specify only one of ?id or ?address")
	}
	if err := h.srv.RemoveRaftPeer(aclOf(r), id, addr); err != nil {
		return nil, 0, err
	}
	return struct{}{}, 0, nil
}
