package fsm

import "github.com/drover-project/drover/nomad/structs"

// applySchedulerConfig stores the scheduler configuration (see
// state.SetSchedulerConfig) and answers a *structs.SchedulerSetConfigResult.
func (f *FSM) applySchedulerConfig(index uint64, buf []byte) any {
	var req structs.SchedulerSetConfigRequest
	decode(index, buf, &req)
	updated, err := f.state.SetSchedulerConfig(index, &req.Config, req.CAS)
	if err != nil {
		return err
	}
	return &structs.SchedulerSetConfigResult{Updated: updated}
}

// applyEvalDelete deletes evaluations (see state.RemoveEvals).
func (f *FSM) applyEvalDelete(index uint64, buf []byte) any {
	var req structs.EvalDeleteRequest
	decode(index, buf, &req)
	return f.state.RemoveEvals(index, req.EvalIDs)
}

// applyNodePoolUpsert stores node pools.
func (f *FSM) applyNodePoolUpsert(index uint64, buf []byte) any {
	var req structs.NodePoolUpsertRequest
	decode(index, buf, &req)
	return f.state.UpsertNodePools(index, req.NodePools)
}

// applyNodePoolDelete deletes node pools (see state.DeleteNodePools).
func (f *FSM) applyNodePoolDelete(index uint64, buf []byte) any {
	var req structs.NodePoolDeleteRequest
	decode(index, buf, &req)
	return f.state.DeleteNodePools(index, req.Names)
}

// applyAutopilotConfig stores the autopilot configuration.
func (f *FSM) applyAutopilotConfig(index uint64, buf []byte) any {
	var req structs.AutopilotSetConfigRequest
	decode(index, buf, &req)
	updated, err := f.state.SetAutopilotConfig(index, &req.Config, req.CAS)
	if err != nil {
		return err
	}
	return &structs.SchedulerSetConfigResult{Updated: updated}
}
