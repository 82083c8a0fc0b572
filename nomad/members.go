package nomad

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/drover-project/drover/nomad/structs"
)

// Member is one server of the cluster as /v1/agent/members reports it.
type Member struct {
	Name   string // "<node name>.<region>"
	ID     string // the raft server ID (node name)
	Addr   string // host of the rpc address
	Port   int    // port of the rpc address
	Status string // "alive" when it answers, "failed" otherwise
	Voter  bool
	Leader bool
}

// Members lists the servers of the raft configuration, probing each other
// server's rpc address to report it alive or failed.
func (s *Server) Members(ctx context.Context) ([]Member, error) {
	peers, _, err := s.RaftConfiguration()
	if err != nil {
		return nil, err
	}
	out := make([]Member, len(peers))
	var wg sync.WaitGroup
	for i, p := range peers {
		host, port, _ := net.SplitHostPort(p.Address)
		n, _ := strconv.Atoi(port)
		out[i] = Member{Name: p.ID + "." + s.config.Region, ID: p.ID, Addr: host, Port: n,
			Voter: p.Voter, Leader: p.Leader, Status: "alive"}
		if p.ID == s.config.NodeName {
			continue
		}
		wg.Go(func() {
			if !s.cluster.Alive(ctx, p.Address) {
				out[i].Status = "failed"
			}
		})
	}
	wg.Wait()
	return out, nil
}

// ForceLeave removes the server named node ("name" or "name.region") from
// the cluster. A name that is not a member is not an error, as in Nomad.
// Call it on the leader.
func (s *Server) ForceLeave(node string) error {
	id := strings.TrimSuffix(node, "."+s.config.Region)
	if id == s.config.NodeName {
		return &structs.RequestError{Kind: structs.ErrBadRequest, Msg: "a server cannot force itself to leave"}
	}
	peers, _, err := s.RaftConfiguration()
	if err != nil {
		return err
	}
	for _, p := range peers {
		if p.ID == id {
			return s.RemoveRaftPeer(p.ID, "")
		}
	}
	return nil
}

// Join joins each server at addrs (rpc addresses) into this server's
// cluster (or this server into theirs) and returns how many joined and the
// first error.
func (s *Server) Join(addrs []string) (int, error) {
	var n int
	var first error
	for _, a := range addrs {
		if _, err := s.cluster.Join(a); err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		n++
	}
	return n, first
}

// Region is the server's region.
func (s *Server) Region() string { return s.config.Region }

// ServeAlso makes ln a second entrance to the server's rpc port (the
// agent's serf port, by which `agent join` may name it). It returns when ln
// is closed.
func (s *Server) ServeAlso(ln net.Listener) { s.cluster.ServeAlso(ln) }
