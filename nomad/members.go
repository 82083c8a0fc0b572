package nomad

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/cluster/wan"
	"github.com/drover-project/drover/nomad/structs"
)

// Member is one server of any region as /v1/agent/members reports it.
type Member struct {
	Name       string // "<node name>.<region>"
	ID         string // the raft server ID (node name)
	Region     string
	Datacenter string // "" when not known yet
	Build      string // "" when not known yet
	Addr       string // host of the rpc address
	Port       int    // port of the rpc address
	Status     string // "alive" when it answers, "failed" otherwise, "left" after a force-leave
	// Voter and Leader describe a server of this server's region (raft
	// roles of other regions are not known here).
	Voter  bool
	Leader bool
}

// Members lists the servers of this region's raft configuration, probing
// each other server's rpc address to report it alive or failed, followed
// by the servers of the other regions with this server's view of them.
// caller needs node:read (nil: ACLs disabled, or an internal caller).
func (s *Server) Members(ctx context.Context, caller *acl.ACL) ([]Member, error) {
	if err := permit(caller.AllowNodeRead()); err != nil {
		return nil, err
	}
	peers, _, err := s.RaftConfiguration(nil)
	if err != nil {
		return nil, err
	}
	region := s.cluster.Region()
	known := map[string]wan.View{}
	for _, v := range s.cluster.WANMembers() {
		known[v.Name()] = v
	}
	out := make([]Member, len(peers))
	var wg sync.WaitGroup
	for i, p := range peers {
		host, port, _ := net.SplitHostPort(p.Address)
		n, _ := strconv.Atoi(port)
		name := p.ID + "." + region
		out[i] = Member{Name: name, ID: p.ID, Region: region, Addr: host, Port: n,
			Datacenter: known[name].Datacenter, Build: known[name].Build,
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
	for _, v := range s.cluster.WANMembers() {
		if v.Region == region {
			continue // the raft configuration is the truth about this region
		}
		host, port, _ := net.SplitHostPort(v.Addr)
		n, _ := strconv.Atoi(port)
		out = append(out, Member{Name: v.Name(), ID: v.ID, Region: v.Region, Datacenter: v.Datacenter,
			Build: v.Build, Addr: host, Port: n, Status: string(v.Status)})
	}
	return out, nil
}

// Regions lists, sorted, this server's region and every region with an
// alive server.
func (s *Server) Regions() []string { return s.cluster.Regions() }

// ForceLeave removes the server named node ("name" or "name.region") from
// the cluster: a server of this region leaves the raft configuration, one
// of another region is marked left in the membership of every region. A
// name that is not a member is not an error, as in Nomad. Call it on the
// leader.
func (s *Server) ForceLeave(caller *acl.ACL, node string) error {
	if err := permit(caller.AllowAgentWrite()); err != nil {
		return err
	}
	region := s.cluster.Region()
	if i := strings.LastIndex(node, "."); i > 0 && node[i+1:] != region && s.cluster.ForceLeaveMember(node) {
		return nil
	}
	id := strings.TrimSuffix(node, "."+region)
	if id == s.config.NodeName {
		return &structs.RequestError{Kind: structs.ErrBadRequest, Msg: "a server cannot force itself to leave"}
	}
	peers, _, err := s.RaftConfiguration(nil)
	if err != nil {
		return err
	}
	// Other regions stop routing to it too.
	s.cluster.ForceLeaveMember(id + "." + region)
	for _, p := range peers {
		if p.ID == id {
			return s.RemoveRaftPeer(nil, p.ID, "")
		}
	}
	return nil
}

// Join joins each server at addrs (rpc addresses) into this server's
// cluster (or this server into theirs) and returns how many joined and the
// first error.
func (s *Server) Join(caller *acl.ACL, addrs []string) (int, error) {
	if err := permit(caller.AllowAgentWrite()); err != nil {
		return 0, err
	}
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
func (s *Server) Region() string { return s.cluster.Region() }

// ServeAlso makes ln a second entrance to the server's rpc port (the
// agent's serf port, by which `agent join` may name it). It returns when ln
// is closed.
func (s *Server) ServeAlso(ln net.Listener) { s.cluster.ServeAlso(ln) }
