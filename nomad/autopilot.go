package nomad

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// AutopilotConfig returns the autopilot configuration (Nomad's defaults
// when none was set) and its index.
// caller needs operator:read (nil: ACLs disabled, or an internal caller).
func (s *Server) AutopilotConfig(caller *acl.ACL) (*structs.AutopilotConfiguration, uint64, error) {
	if err := permit(caller.AllowOperatorRead()); err != nil {
		return nil, 0, err
	}
	cfg, err := s.State().AutopilotConfig(nil)
	if err != nil {
		return nil, 0, err
	}
	if cfg == nil {
		cfg = structs.DefaultAutopilotConfiguration()
	}
	return cfg, s.State().Index(state.TableSchedulerConfig), nil
}

// SetAutopilotConfig validates and stores cfg through raft (with cas, only
// over the stored ModifyIndex) and reports whether it was written.
func (s *Server) SetAutopilotConfig(caller *acl.ACL, cfg *structs.AutopilotConfiguration, cas bool) (bool, uint64, error) {
	if err := permit(caller.AllowOperatorWrite()); err != nil {
		return false, 0, err
	}
	if err := cfg.Validate(); err != nil {
		return false, 0, &structs.RequestError{Kind: structs.ErrBadRequest, Msg: err.Error()}
	}
	resp, index, err := s.raftApply(structs.AutopilotConfigRequestType, &structs.AutopilotSetConfigRequest{Config: *cfg, CAS: cas})
	if err != nil {
		return false, 0, err
	}
	switch r := resp.(type) {
	case error:
		return false, 0, r
	case *structs.SchedulerSetConfigResult:
		return r.Updated, index, nil
	}
	return false, 0, fmt.Errorf("autopilot config: unexpected FSM response %T", resp)
}

// ServerHealth is one server's health as the leader sees it.
type ServerHealth struct {
	ID, Name, Address string
	Status            string // "alive" or "failed"
	Leader, Voter     bool
	LastContact       time.Duration
	LastTerm          uint64
	LastIndex         uint64
	Healthy           bool
	StableSince       time.Time
}

// ClusterHealth is the autopilot health report.
type ClusterHealth struct {
	Healthy          bool
	FailureTolerance int
	Servers          []ServerHealth
	Leader           string
	Voters           []string
}

// serverHealthy judges one server against the leader's term and index: it
// answers, is in the leader's term, heard from the leader within the
// threshold and trails by at most MaxTrailingLogs entries.
func serverHealthy(h ServerHealth, leaderTerm, leaderIndex uint64, cfg *structs.AutopilotConfiguration) bool {
	if h.Status != "alive" || h.LastTerm != leaderTerm {
		return false
	}
	if cfg.LastContactThreshold > 0 && h.LastContact > cfg.LastContactThreshold {
		return false
	}
	return leaderIndex <= h.LastIndex || leaderIndex-h.LastIndex <= cfg.MaxTrailingLogs
}

// failureTolerance is how many voters may fail with the cluster keeping a
// quorum: healthy voters beyond a majority of all voters.
func failureTolerance(voters, healthyVoters int) int {
	return max(healthyVoters-(voters/2+1), 0)
}

// stableTracker remembers since when each server has been healthy.
type stableTracker struct {
	mu    sync.Mutex
	since map[string]time.Time
}

func (t *stableTracker) observe(id string, healthy bool, now time.Time) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.since == nil {
		t.since = map[string]time.Time{}
	}
	if !healthy {
		delete(t.since, id)
		return time.Time{}
	}
	if _, ok := t.since[id]; !ok {
		t.since[id] = now
	}
	return t.since[id]
}

// AutopilotHealth probes every server of the raft configuration and
// judges its health. Call it on the leader.
// caller needs operator:read (nil: ACLs disabled, or an internal caller).
func (s *Server) AutopilotHealth(ctx context.Context, caller *acl.ACL) (*ClusterHealth, error) {
	if err := permit(caller.AllowOperatorRead()); err != nil {
		return nil, err
	}
	cfg, _, err := s.AutopilotConfig(nil)
	if err != nil {
		return nil, err
	}
	peers, _, err := s.RaftConfiguration(nil)
	if err != nil {
		return nil, err
	}
	self := s.cluster.SelfInfo()
	now := s.now()
	out := &ClusterHealth{Servers: make([]ServerHealth, len(peers))}
	var wg sync.WaitGroup
	for i, p := range peers {
		h := ServerHealth{ID: p.ID, Name: p.ID + "." + s.config.Region, Address: p.Address, Leader: p.Leader, Voter: p.Voter, Status: "alive"}
		if p.ID == s.config.NodeName {
			h.LastTerm, h.LastIndex, h.LastContact = self.Term, self.AppliedIndex, time.Duration(self.LastContactMillis)*time.Millisecond
			out.Servers[i] = h
			continue
		}
		wg.Go(func() {
			info, err := s.cluster.Probe(ctx, p.Address)
			if err != nil {
				h.Status = "failed"
			} else {
				h.LastTerm, h.LastIndex, h.LastContact = info.Term, info.AppliedIndex, time.Duration(info.LastContactMillis)*time.Millisecond
			}
			out.Servers[i] = h
		})
	}
	wg.Wait()
	voters, healthyVoters := 0, 0
	out.Healthy = true
	for i := range out.Servers {
		h := &out.Servers[i]
		h.Healthy = serverHealthy(*h, self.Term, self.AppliedIndex, cfg)
		h.StableSince = s.stable.observe(h.ID, h.Healthy, now)
		if h.Leader {
			out.Leader = h.ID
		}
		if h.Voter {
			voters++
			out.Voters = append(out.Voters, h.ID)
			if h.Healthy {
				healthyVoters++
			}
		}
		out.Healthy = out.Healthy && h.Healthy
	}
	out.FailureTolerance = failureTolerance(voters, healthyVoters)
	return out, nil
}
