package fsm

import (
	"fmt"

	"github.com/drover-project/drover/nomad/structs"
)

// applyPeriodicLaunch registers a periodic job's child and its evaluation
// (when the launch was not skipped) and records the launch time, so that
// every server agrees on what has been launched.
func (f *FSM) applyPeriodicLaunch(index uint64, buf []byte) any {
	var req structs.PeriodicLaunchRequest
	decode(index, buf, &req)
	if req.Launch == nil {
		return fmt.Errorf("fsm: periodic launch at index %d without a launch", index)
	}
	if req.Child != nil {
		child, err := f.registerJob(index, nil, req.Child, req.SubmitTime)
		if err != nil {
			return err
		}
		if err := f.upsertEvals(index, evalForJob(req.Eval, child)); err != nil {
			return err
		}
	}
	return f.state.UpsertPeriodicLaunch(index, req.Launch)
}

// applyScalingEvent registers the scaled job version and its evaluation
// (when the count changed) and records the scaling event.
func (f *FSM) applyScalingEvent(index uint64, buf []byte) any {
	var req structs.ScalingEventRequest
	decode(index, buf, &req)
	if req.Event == nil {
		return fmt.Errorf("fsm: scaling event at index %d without an event", index)
	}
	if req.Job != nil {
		if req.BaseJobModifyIndex != 0 {
			cur, err := f.state.JobByID(nil, req.Job.Namespace, req.Job.ID)
			if err != nil {
				return err
			}
			if cur == nil || cur.JobModifyIndex != req.BaseJobModifyIndex {
				return structs.ErrJobChanged
			}
		}
		job, err := f.registerJob(index, nil, req.Job, req.SubmitTime)
		if err != nil {
			return err
		}
		if err := f.upsertEvals(index, evalForJob(req.Eval, job)); err != nil {
			return err
		}
	}
	return f.state.UpsertScalingEvent(index, req.Namespace, req.JobID, req.Group, req.Event)
}
