package fsm

import (
	"errors"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// fixture is an FSM holding one node, job "web" (version 0), one
// allocation of it in a running deployment, and the evals its hook saw
// since the setup.
type fixture struct {
	f      *FSM
	s      *state.StateStore
	node   *structs.Node
	job    *structs.Job
	alloc  *structs.Allocation
	dep    *structs.Deployment
	hooked []*structs.Evaluation
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	fx := &fixture{f: newFSM()}
	fx.s = fx.f.State()
	fx.f.SetEvalsHook(func(evals []*structs.Evaluation) { fx.hooked = append(fx.hooked, evals...) })
	fx.node = testNode()
	mustApply(t, fx.f, 1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: fx.node})
	mustApply(t, fx.f, 2, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: testJob("web"), SubmitTime: 100})
	fx.job = fx.mustJob(t)
	fx.alloc = testAlloc(fx.job, fx.node.ID)
	fx.dep = testDeployment(fx.job)
	fx.alloc.DeploymentID = fx.dep.ID
	mustApply(t, fx.f, 3, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{
		Job: fx.job, AllocsUpdated: []*structs.Allocation{fx.alloc}, Deployment: fx.dep, UpdatedAt: 300,
	})
	fx.hooked = nil
	return fx
}

func (fx *fixture) mustJob(t *testing.T) *structs.Job {
	t.Helper()
	j, err := fx.s.JobByID(nil, "", "web")
	require.NoError(t, err)
	require.NotNil(t, j)
	return j
}

func (fx *fixture) mustAlloc(t *testing.T) *structs.Allocation {
	t.Helper()
	a, err := fx.s.AllocByID(nil, fx.alloc.ID)
	require.NoError(t, err)
	require.NotNil(t, a)
	return a
}

func (fx *fixture) mustDeployment(t *testing.T) *structs.Deployment {
	t.Helper()
	d, err := fx.s.DeploymentByID(nil, fx.dep.ID)
	require.NoError(t, err)
	require.NotNil(t, d)
	return d
}

// requireHooked checks that the hook saw exactly the evals ids, stored.
func (fx *fixture) requireHooked(t *testing.T, index uint64, ids ...string) {
	t.Helper()
	var got []string
	for _, e := range fx.hooked {
		got = append(got, e.ID)
		require.Equal(t, index, e.ModifyIndex, "hook gets stored copies")
	}
	require.ElementsMatch(t, ids, got)
}

func TestApply(t *testing.T) {
	const idx = 10
	tests := []struct {
		name  string
		msg   func(fx *fixture) (structs.MessageType, any)
		check func(t *testing.T, fx *fixture, resp any)
	}{
		{
			name: "job register new version with eval and submission",
			msg: func(fx *fixture) (structs.MessageType, any) {
				j := testJob("web")
				j.Priority = 70
				return structs.JobRegisterRequestType, &structs.JobRegisterRequest{
					Job: j, Eval: testEval(j), SubmitTime: 1000,
					Submission: &structs.JobSubmission{Source: "job \"web\" {}", Format: "hcl2"},
				}
			},
			check: func(t *testing.T, fx *fixture, resp any) {
				require.Equal(t, &RegisterResult{Version: 1, JobModifyIndex: idx}, resp)
				j := fx.mustJob(t)
				require.Equal(t, int64(1000), j.SubmitTime)
				require.Equal(t, 70, j.Priority)
				require.Len(t, fx.hooked, 1)
				require.Equal(t, uint64(idx), fx.hooked[0].JobModifyIndex)
				sub, err := fx.s.SubmissionByVersion(nil, "", "web", 1)
				require.NoError(t, err)
				require.Equal(t, "hcl2", sub.Format)
			},
		},
		{
			name: "job register without job is an error",
			msg: func(fx *fixture) (structs.MessageType, any) {
				return structs.JobRegisterRequestType, &structs.JobRegisterRequest{}
			},
			check: func(t *testing.T, fx *fixture, resp any) { require.Error(t, resp.(error)) },
		},
		{
			name: "job deregister stops with a new version",
			msg: func(fx *fixture) (structs.MessageType, any) {
				return structs.JobDeregisterRequestType, &structs.JobDeregisterRequest{
					Namespace: "default", JobID: "web", Eval: testEval(fx.job), SubmitTime: 2000,
				}
			},
			check: func(t *testing.T, fx *fixture, resp any) {
				require.Nil(t, resp)
				j := fx.mustJob(t)
				require.True(t, j.Stop)
				require.Equal(t, uint64(1), j.Version)
				require.Equal(t, int64(2000), j.SubmitTime)
				require.Len(t, fx.hooked, 1)
				require.Equal(t, uint64(idx), fx.hooked[0].JobModifyIndex)
			},
		},
		{
			name: "job deregister purge",
			msg: func(fx *fixture) (structs.MessageType, any) {
				return structs.JobDeregisterRequestType, &structs.JobDeregisterRequest{Namespace: "default", JobID: "web", Purge: true}
			},
			check: func(t *testing.T, fx *fixture, resp any) {
				require.Nil(t, resp)
				j, err := fx.s.JobByID(nil, "", "web")
				require.NoError(t, err)
				require.Nil(t, j)
				fx.mustAlloc(t) // allocations stay
			},
		},
		{
			name: "job deregister of a missing job",
			msg: func(fx *fixture) (structs.MessageType, any) {
				return structs.JobDeregisterRequestType, &structs.JobDeregisterRequest{Namespace: "default", JobID: "nope"}
			},
			check: func(t *testing.T, fx *fixture, resp any) {
				require.True(t, errors.Is(resp.(error), state.ErrNotFound), "got %v", resp)
			},
		},
		{
			name: "eval update",
			msg: func(fx *fixture) (structs.MessageType, any) {
				return structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{testEval(fx.job), testEval(fx.job)}}
			},
			check: func(t *testing.T, fx *fixture, resp any) {
				require.Nil(t, resp)
				evals, err := fx.s.EvalsByJob(nil, "", "web")
				require.NoError(t, err)
				require.Len(t, evals, 2)
				fx.requireHooked(t, idx, evals[0].ID, evals[1].ID)
			},
		},
		{
			name: "node register with eval",
			msg: func(fx *fixture) (structs.MessageType, any) {
				n := testNode()
				n.ID = "11111111-2222-3333-4444-555555555555"
				e := testEval(fx.job)
				e.TriggeredBy, e.NodeID = structs.EvalTriggerNodeUpdate, n.ID
				return structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: n, Eval: e}
			},
			check: func(t *testing.T, fx *fixture, resp any) {
				require.Nil(t, resp)
				n, err := fx.s.NodeByID(nil, "11111111-2222-3333-4444-555555555555")
				require.NoError(t, err)
				require.Equal(t, uint64(idx), n.CreateIndex)
				require.Len(t, fx.hooked, 1)
			},
		},
		{
			name: "node update status",
			msg: func(fx *fixture) (structs.MessageType, any) {
				return structs.NodeUpdateStatusRequestType, &structs.NodeUpdateStatusRequest{
					NodeID: fx.node.ID, Status: structs.NodeStatusDown, UpdatedAt: 42,
					Event: &structs.NodeEvent{Message: "Node heartbeat missed", Subsystem: "Cluster"},
					Evals: []*structs.Evaluation{testEval(fx.job)},
				}
			},
			check: func(t *testing.T, fx *fixture, resp any) {
				require.Nil(t, resp)
				n, _ := fx.s.NodeByID(nil, fx.node.ID)
				require.Equal(t, structs.NodeStatusDown, n.Status)
				require.Equal(t, int64(42), n.StatusUpdatedAt)
				require.Equal(t, "Node heartbeat missed", n.Events[len(n.Events)-1].Message)
				require.Len(t, fx.hooked, 1)
			},
		},
		{
			name: "node update eligibility",
			msg: func(fx *fixture) (structs.MessageType, any) {
				return structs.NodeUpdateEligibilityRequestType, &structs.NodeUpdateEligibilityRequest{
					NodeID: fx.node.ID, Eligibility: structs.NodeSchedulingIneligible, UpdatedAt: 43,
				}
			},
			check: func(t *testing.T, fx *fixture, resp any) {
				require.Nil(t, resp)
				n, _ := fx.s.NodeByID(nil, fx.node.ID)
				require.Equal(t, structs.NodeSchedulingIneligible, n.SchedulingEligibility)
				require.Empty(t, fx.hooked)
			},
		},
		{
			name: "node update drain",
			msg: func(fx *fixture) (structs.MessageType, any) {
				return structs.NodeUpdateDrainRequestType, &structs.NodeUpdateDrainRequest{
					NodeID: fx.node.ID, Drain: true, UpdatedAt: 44, Evals: []*structs.Evaluation{testEval(fx.job)},
				}
			},
			check: func(t *testing.T, fx *fixture, resp any) {
				require.Nil(t, resp)
				n, _ := fx.s.NodeByID(nil, fx.node.ID)
				require.True(t, n.Drain)
				require.Equal(t, structs.NodeSchedulingIneligible, n.SchedulingEligibility)
				require.Len(t, fx.hooked, 1)
			},
		},
		{
			name: "node update of a missing node",
			msg: func(fx *fixture) (structs.MessageType, any) {
				return structs.NodeUpdateDrainRequestType, &structs.NodeUpdateDrainRequest{NodeID: "nope", Drain: true}
			},
			check: func(t *testing.T, fx *fixture, resp any) {
				require.True(t, errors.Is(resp.(error), state.ErrNotFound), "got %v", resp)
			},
		},
		{
			name: "node deregister",
			msg: func(fx *fixture) (structs.MessageType, any) {
				return structs.NodeDeregisterRequestType, &structs.NodeDeregisterRequest{NodeIDs: []string{fx.node.ID}}
			},
			check: func(t *testing.T, fx *fixture, resp any) {
				require.Nil(t, resp)
				n, err := fx.s.NodeByID(nil, fx.node.ID)
				require.NoError(t, err)
				require.Nil(t, n)
			},
		},
		{
			name: "alloc client update",
			msg: func(fx *fixture) (structs.MessageType, any) {
				u := &structs.Allocation{
					ID: fx.alloc.ID, ClientStatus: structs.AllocClientStatusRunning,
					TaskStates: map[string]*structs.TaskState{"server": {State: "running"}},
				}
				return structs.AllocClientUpdateRequestType, &structs.AllocClientUpdateRequest{Allocs: []*structs.Allocation{u}, UpdatedAt: 777}
			},
			check: func(t *testing.T, fx *fixture, resp any) {
				require.Nil(t, resp)
				a := fx.mustAlloc(t)
				require.Equal(t, structs.AllocClientStatusRunning, a.ClientStatus)
				require.Equal(t, "running", a.TaskStates["server"].State)
				require.Equal(t, int64(777), a.ModifyTime)
				require.Equal(t, structs.JobStatusRunning, fx.mustJob(t).Status)
			},
		},
		{
			name: "apply plan results",
			msg: func(fx *fixture) (structs.MessageType, any) {
				stop := fx.alloc.Copy()
				stop.DesiredStatus = structs.AllocDesiredStatusStop
				repl := testAlloc(fx.job, fx.node.ID)
				repl.ID = "99999999-0000-0000-0000-000000000000"
				repl.PreviousAllocation = fx.alloc.ID
				return structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{
					Job: fx.job, AllocsUpdated: []*structs.Allocation{repl}, AllocsStopped: []*structs.Allocation{stop}, UpdatedAt: 900,
				}
			},
			check: func(t *testing.T, fx *fixture, resp any) {
				require.Nil(t, resp)
				old := fx.mustAlloc(t)
				require.Equal(t, structs.AllocDesiredStatusStop, old.DesiredStatus)
				require.Equal(t, "99999999-0000-0000-0000-000000000000", old.NextAllocation)
				repl, err := fx.s.AllocByID(nil, "99999999-0000-0000-0000-000000000000")
				require.NoError(t, err)
				require.Same(t, fx.job, repl.Job)
				require.Empty(t, fx.hooked)
			},
		},
		{
			name: "deployment status update with auto-revert job and eval",
			msg: func(fx *fixture) (structs.MessageType, any) {
				revert := testJob("web")
				revert.Priority = 60
				return structs.DeploymentStatusUpdateRequestType, &structs.DeploymentStatusUpdateRequest{
					Update: &structs.DeploymentStatusUpdate{
						DeploymentID: fx.dep.ID, Status: structs.DeploymentStatusFailed,
						StatusDescription: structs.DeploymentStatusDescriptionFailedAllocations,
					},
					Job: revert, Eval: testEval(fx.job), UpdatedAt: 1234,
				}
			},
			check: func(t *testing.T, fx *fixture, resp any) {
				require.Nil(t, resp)
				d := fx.mustDeployment(t)
				require.Equal(t, structs.DeploymentStatusFailed, d.Status)
				require.Equal(t, int64(1234), d.ModifyTime)
				j := fx.mustJob(t)
				require.Equal(t, uint64(1), j.Version)
				require.Equal(t, 60, j.Priority)
				require.Len(t, fx.hooked, 1)
				require.Equal(t, uint64(idx), fx.hooked[0].JobModifyIndex)
			},
		},
		{
			name: "deployment promote",
			msg: func(fx *fixture) (structs.MessageType, any) {
				return structs.DeploymentPromoteRequestType, &structs.DeploymentPromoteRequest{
					DeploymentID: fx.dep.ID, All: true, Eval: testEval(fx.job), UpdatedAt: 55,
				}
			},
			check: func(t *testing.T, fx *fixture, resp any) {
				require.Nil(t, resp)
				require.True(t, fx.mustDeployment(t).TaskGroups["web"].Promoted)
				require.Len(t, fx.hooked, 1)
			},
		},
		{
			name: "deployment promote of an unknown group is a conflict",
			msg: func(fx *fixture) (structs.MessageType, any) {
				return structs.DeploymentPromoteRequestType, &structs.DeploymentPromoteRequest{
					DeploymentID: fx.dep.ID, Groups: []string{"db"}, Eval: testEval(fx.job),
				}
			},
			check: func(t *testing.T, fx *fixture, resp any) {
				require.True(t, errors.Is(resp.(error), state.ErrConflict), "got %v", resp)
				require.Empty(t, fx.hooked, "no eval for a rejected promotion")
			},
		},
		{
			name: "deployment alloc health",
			msg: func(fx *fixture) (structs.MessageType, any) {
				return structs.DeploymentAllocHealthRequestType, &structs.DeploymentAllocHealthRequest{
					DeploymentID: fx.dep.ID, HealthyAllocationIDs: []string{fx.alloc.ID}, Timestamp: 5e9,
					Eval: testEval(fx.job),
				}
			},
			check: func(t *testing.T, fx *fixture, resp any) {
				require.Nil(t, resp)
				require.True(t, fx.mustAlloc(t).DeploymentStatus.IsHealthy())
				require.Equal(t, 1, fx.mustDeployment(t).TaskGroups["web"].HealthyAllocs)
				require.Len(t, fx.hooked, 1)
			},
		},
		{
			name: "job stability",
			msg: func(fx *fixture) (structs.MessageType, any) {
				return structs.JobStabilityRequestType, &structs.JobStabilityRequest{Namespace: "default", JobID: "web", Version: 0, Stable: true}
			},
			check: func(t *testing.T, fx *fixture, resp any) {
				require.Nil(t, resp)
				require.True(t, fx.mustJob(t).Stable)
			},
		},
		{
			name: "alloc desired transition",
			msg: func(fx *fixture) (structs.MessageType, any) {
				return structs.AllocDesiredTransitionRequestType, &structs.AllocDesiredTransitionRequest{
					AllocIDs: []string{fx.alloc.ID}, Description: "alloc was stopped by user",
					Evals: []*structs.Evaluation{testEval(fx.job)},
				}
			},
			check: func(t *testing.T, fx *fixture, resp any) {
				require.Nil(t, resp)
				a := fx.mustAlloc(t)
				require.Equal(t, structs.AllocDesiredStatusStop, a.DesiredStatus)
				require.Equal(t, "alloc was stopped by user", a.DesiredDescription)
				require.Len(t, fx.hooked, 1)
			},
		},
		{
			name: "a known type with the ignore flag still applies",
			msg: func(fx *fixture) (structs.MessageType, any) {
				return structs.JobStabilityRequestType | structs.IgnoreUnknownTypeFlag,
					&structs.JobStabilityRequest{Namespace: "default", JobID: "web", Version: 0, Stable: true}
			},
			check: func(t *testing.T, fx *fixture, resp any) {
				require.Nil(t, resp)
				require.True(t, fx.mustJob(t).Stable)
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t)
			typ, msg := tc.msg(fx)
			resp := apply(t, fx.f, idx, typ, msg)
			tc.check(t, fx, resp)
		})
	}
}

func TestApply_UnknownType(t *testing.T) {
	f := newFSM()
	const unknown structs.MessageType = 127
	resp := f.Apply(&raft.Log{Index: 1, Data: append([]byte{uint8(unknown | structs.IgnoreUnknownTypeFlag)}, 0xc0)})
	require.Nil(t, resp)
	require.Zero(t, f.State().LatestIndex())

	require.Panics(t, func() {
		f.Apply(&raft.Log{Index: 2, Data: []byte{uint8(unknown), 0xc0}})
	})
	require.Panics(t, func() {
		f.Apply(&raft.Log{Index: 3, Data: []byte{uint8(structs.JobRegisterRequestType), 0xff, 0x00}})
	}, "a corrupt entry panics")
}

// A plan committed in its wire form (what the leader proposes) stores the
// same allocations as the full request: the rollout's stop and
// replacement, with times, indexes and the previous allocation's link.
func TestApply_PlanResultsCompactSameAsFull(t *testing.T) {
	var stored [2][]*structs.Allocation
	for i, typ := range []structs.MessageType{structs.ApplyPlanResultsRequestType, structs.ApplyPlanResultsCompactRequestType} {
		fx := newFixture(t)
		repl := testAlloc(fx.job, fx.node.ID)
		repl.ID, repl.EvalID = "replacement", "e2"
		repl.PreviousAllocation = fx.alloc.ID
		repl.DeploymentID = fx.dep.ID
		stop := fx.alloc.Copy()
		stop.DesiredStatus, stop.DesiredDescription = structs.AllocDesiredStatusStop, "alloc is being updated due to job update"
		req := &structs.ApplyPlanResultsRequest{Job: fx.job, AllocsStopped: []*structs.Allocation{stop},
			AllocsUpdated: []*structs.Allocation{repl}, EvalID: "e2", UpdatedAt: 400}
		var msg any = req
		if typ == structs.ApplyPlanResultsCompactRequestType {
			msg = structs.CompactPlanResults(req)
		}
		mustApply(t, fx.f, 4, typ, msg)
		all, err := fx.s.AllocsByJob(nil, "", "web", true)
		require.NoError(t, err)
		require.Len(t, all, 2)
		// The fixtures' IDs are random: name them by role.
		role := map[string]string{fx.alloc.ID: "old", fx.node.ID: "node", fx.dep.ID: "dep", fx.alloc.EvalID: "eval"}
		for _, a := range all {
			c := a.Copy()
			for _, f := range []*string{&c.ID, &c.NodeID, &c.DeploymentID, &c.EvalID, &c.PreviousAllocation} {
				if r, ok := role[*f]; ok {
					*f = r
				}
			}
			stored[i] = append(stored[i], c)
		}
	}
	require.Equal(t, stored[0], stored[1])
	for _, a := range stored[1] {
		switch a.ID {
		case "replacement":
			require.Equal(t, uint64(4), a.CreateIndex)
			require.Equal(t, int64(400), a.CreateTime)
		default:
			require.Equal(t, structs.AllocDesiredStatusStop, a.DesiredStatus)
			require.Equal(t, "replacement", a.NextAllocation)
		}
	}
}
