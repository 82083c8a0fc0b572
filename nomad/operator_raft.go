package nomad

import (
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/structs"
)

// RaftPeer is one server of the raft configuration.
type RaftPeer struct {
	ID      string // the server's node name (its raft server ID)
	Address string // its rpc address
	Leader  bool
	Voter   bool
}

// RaftConfiguration returns the servers of the latest raft configuration
// and the raft index it was written at.
// caller needs operator:read (nil: ACLs disabled, or an internal caller).
func (s *Server) RaftConfiguration(caller *acl.ACL) ([]RaftPeer, uint64, error) {
	if err := permit(caller.AllowOperatorRead()); err != nil {
		return nil, 0, err
	}
	r := s.cluster.Raft()
	f := r.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, 0, fmt.Errorf("raft configuration: %w", err)
	}
	leaderAddr, leaderID := r.LeaderWithID()
	var out []RaftPeer
	for _, srv := range f.Configuration().Servers {
		out = append(out, RaftPeer{
			ID: string(srv.ID), Address: string(srv.Address),
			Leader: srv.ID == leaderID && srv.Address == leaderAddr,
			Voter:  srv.Suffrage == raft.Voter,
		})
	}
	return out, f.Index(), nil
}

// RemoveRaftPeer removes the server with raft ID id, or when id is empty
// the one at address, from the raft configuration. Call it on the leader.
// An unknown server is a *structs.RequestError naming it.
func (s *Server) RemoveRaftPeer(caller *acl.ACL, id, address string) error {
	if err := permit(caller.AllowOperatorWrite()); err != nil {
		return err
	}
	peers, index, err := s.RaftConfiguration(nil)
	if err != nil {
		return err
	}
	for _, p := range peers {
		if (id != "" && p.ID == id) || (id == "" && p.Address == address) {
			f := s.cluster.Raft().RemoveServer(raft.ServerID(p.ID), index, raftApplyTimeout)
			if err := f.Error(); err != nil {
				return fmt.Errorf("remove raft peer %s: %w", p.ID, err)
			}
			return nil
		}
	}
	if id != "" {
		return &structs.RequestError{Kind: structs.ErrBadRequest, Msg: fmt.Sprintf("id %q was not found in the Raft configuration", id)}
	}
	return &structs.RequestError{Kind: structs.ErrBadRequest, Msg: fmt.Sprintf("address %q was not found in the Raft configuration", address)}
}
