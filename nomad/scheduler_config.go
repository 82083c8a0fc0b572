package nomad

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// SchedulerConfig returns the scheduler configuration (Nomad's defaults
// when none was set) and the index it is current at.
// caller needs operator:read (nil: ACLs disabled, or an internal caller).
func (s *Server) SchedulerConfig(caller *acl.ACL) (*structs.SchedulerConfiguration, uint64, error) {
	if err := permit(caller.AllowOperatorRead()); err != nil {
		return nil, 0, err
	}
	cfg, err := s.State().SchedulerConfig(nil)
	if err != nil {
		return nil, 0, err
	}
	if cfg == nil {
		cfg = structs.DefaultSchedulerConfiguration()
	}
	return cfg, s.State().Index(state.TableSchedulerConfig), nil
}

// SetSchedulerConfig validates cfg and stores it through raft; with cas the
// write happens only if the stored configuration's ModifyIndex is
// cfg.ModifyIndex (0 when none was set). It reports whether it was written
// and the raft index. An invalid cfg is a *structs.RequestError.
func (s *Server) SetSchedulerConfig(caller *acl.ACL, cfg *structs.SchedulerConfiguration, cas bool) (bool, uint64, error) {
	if err := permit(caller.AllowOperatorWrite()); err != nil {
		return false, 0, err
	}
	if err := cfg.Validate(); err != nil {
		return false, 0, &structs.RequestError{Kind: structs.ErrBadRequest, Msg: err.Error()}
	}
	c := *cfg
	c.Canonicalize()
	resp, index, err := s.raftApply(structs.SchedulerConfigRequestType, &structs.SchedulerSetConfigRequest{Config: c, CAS: cas})
	if err != nil {
		return false, 0, err
	}
	switch r := resp.(type) {
	case error:
		return false, 0, r
	case *structs.SchedulerSetConfigResult:
		return r.Updated, index, nil
	}
	return false, 0, fmt.Errorf("scheduler config: unexpected FSM response %T", resp)
}

// runSchedulerConfig applies the scheduler configuration on the leader
// while it leads: pause_eval_broker pauses and resumes the broker.
func (s *Server) runSchedulerConfig(ctx context.Context) {
	var index uint64
	for ctx.Err() == nil {
		out, next, err := s.State().BlockingQuery(ctx, index, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
			cfg, err := snap.SchedulerConfig(ws)
			return cfg, snap.Index(state.TableSchedulerConfig), err
		})
		if err != nil {
			s.logger.Error("scheduler configuration query failed", "error", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		index = next
		cfg, _ := out.(*structs.SchedulerConfiguration)
		paused := cfg != nil && cfg.PauseEvalBroker
		if paused != s.broker.Paused() {
			s.logger.Info("evaluation broker pause changed by the scheduler configuration", "paused", paused)
			s.broker.SetPaused(paused)
		}
	}
}

// EvalBrokerPaused reports whether the scheduler configuration pauses the
// evaluation broker.
func (s *Server) EvalBrokerPaused() (bool, error) {
	cfg, _, err := s.SchedulerConfig(nil)
	if err != nil {
		return false, err
	}
	return cfg.PauseEvalBroker, nil
}
