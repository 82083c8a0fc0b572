package fsm

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// Two registers that both read JobModifyIndex 2 and enforce it: the first
// to apply wins, the second is refused by the FSM (the endpoint's own
// check ran on the same state for both, before either applied) and writes
// nothing, not even its evaluation.
func TestJobRegisterEnforceIndexIsCheckedWhenApplied(t *testing.T) {
	f := newFSM()
	mustApply(t, f, 2, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: testJob("web"), SubmitTime: 100})

	first, second := testJob("web"), testJob("web")
	first.Meta, second.Meta = map[string]string{"v": "first"}, map[string]string{"v": "second"}
	mustApply(t, f, 3, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: first, EnforceIndex: true, JobModifyIndex: 2, SubmitTime: 200})
	eval := &structs.Evaluation{ID: "e-second", Namespace: second.Namespace, JobID: second.ID, Status: structs.EvalStatusPending, Type: second.Type, TriggeredBy: structs.EvalTriggerJobRegister}
	resp := apply(t, f, 4, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: second, Eval: eval, EnforceIndex: true, JobModifyIndex: 2, SubmitTime: 300})
	err, ok := resp.(error)
	require.True(t, ok, "the second register is refused, got %v", resp)
	require.EqualError(t, err, "Enforcing job modify index 2: job exists with conflicting job modify index: 3")

	job, err := f.State().JobByID(nil, first.Namespace, "web")
	require.NoError(t, err)
	require.Equal(t, "first", job.Meta["v"])
	require.Equal(t, uint64(3), job.JobModifyIndex)
	got, err := f.State().EvalByID(nil, "e-second")
	require.NoError(t, err)
	require.Nil(t, got, "a refused register writes no evaluation")

	// Enforcing 0 means "the job must not exist".
	resp = apply(t, f, 5, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: testJob("web"), EnforceIndex: true, SubmitTime: 400})
	require.ErrorContains(t, resp.(error), "job already exists")
	mustApply(t, f, 6, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: testJob("api"), EnforceIndex: true, SubmitTime: 500})
}

// A scale made from version 2 of a job that was registered again (index
// 3) before the scale applied is refused: the register's version stands,
// nothing of the scale is written.
func TestScaleFromAnOlderVersionIsRefused(t *testing.T) {
	f := newFSM()
	mustApply(t, f, 2, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: testJob("web"), SubmitTime: 100})
	base, err := f.State().JobByID(nil, "default", "web")
	require.NoError(t, err)
	registered := testJob("web")
	registered.Meta = map[string]string{"v": "registered meanwhile"}
	mustApply(t, f, 3, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: registered, SubmitTime: 200})

	scaled := base.Copy()
	scaled.TaskGroups[0].Count = 7
	count := int64(7)
	resp := apply(t, f, 4, structs.ScalingEventRequestType, &structs.ScalingEventRequest{Namespace: "default", JobID: "web", Group: scaled.TaskGroups[0].Name,
		Event: &structs.ScalingEvent{Count: &count}, Job: scaled, BaseJobModifyIndex: base.JobModifyIndex, SubmitTime: 300})
	require.ErrorIs(t, resp.(error), structs.ErrJobChanged)
	cur, err := f.State().JobByID(nil, "default", "web")
	require.NoError(t, err)
	require.Equal(t, "registered meanwhile", cur.Meta["v"])
	require.NotEqual(t, 7, cur.TaskGroups[0].Count)

	// From the current version it applies.
	scaled = cur.Copy()
	scaled.TaskGroups[0].Count = 7
	mustApply(t, f, 5, structs.ScalingEventRequestType, &structs.ScalingEventRequest{Namespace: "default", JobID: "web", Group: scaled.TaskGroups[0].Name,
		Event: &structs.ScalingEvent{Count: &count}, Job: scaled, BaseJobModifyIndex: cur.JobModifyIndex, SubmitTime: 400})
	cur, err = f.State().JobByID(nil, "default", "web")
	require.NoError(t, err)
	require.Equal(t, 7, cur.TaskGroups[0].Count)
	require.Equal(t, "registered meanwhile", cur.Meta["v"])
}
