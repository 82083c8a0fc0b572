// Package mock builds small, valid domain objects for tests of the server
// packages (state store, FSM, endpoints). Each call returns fresh objects
// with new IDs; tests change what they need.
//
// Imported by tests only.
package mock

import (
	"github.com/google/uuid"

	"github.com/drover-project/drover/nomad/structs"
)

// Job returns a system job with one group "web" of one docker task and an
// update block (max_parallel 1).
func Job(id string) *structs.Job {
	return &structs.Job{
		Namespace: structs.DefaultNamespace,
		ID:        id,
		Name:      id,
		Type:      structs.JobTypeSystem,
		Priority:  50,
		TaskGroups: []*structs.TaskGroup{{
			Name:  "web",
			Count: 1,
			Tasks: []*structs.Task{{
				Name:   "server",
				Driver: "docker",
				Config: map[string]any{"image": "nginx:1"},
			}},
			Update: &structs.UpdateStrategy{MaxParallel: 1},
		}},
	}
}

// Node returns a ready, eligible node in dc1.
func Node() *structs.Node {
	return &structs.Node{
		ID:                    uuid.NewString(),
		SecretID:              uuid.NewString(),
		Name:                  "node",
		Datacenter:            "dc1",
		Status:                structs.NodeStatusReady,
		SchedulingEligibility: structs.NodeSchedulingEligible,
		Attributes:            map[string]string{"kernel.name": "linux"},
	}
}

// Alloc returns a pending allocation of job's group "web" on nodeID,
// without Job (the state store links it).
func Alloc(job *structs.Job, nodeID string) *structs.Allocation {
	return &structs.Allocation{
		ID:            uuid.NewString(),
		Namespace:     job.Namespace,
		EvalID:        uuid.NewString(),
		Name:          job.ID + ".web[0]",
		NodeID:        nodeID,
		JobID:         job.ID,
		JobVersion:    job.Version,
		TaskGroup:     "web",
		DesiredStatus: structs.AllocDesiredStatusRun,
		ClientStatus:  structs.AllocClientStatusPending,
	}
}

// Eval returns a pending evaluation of job.
func Eval(job *structs.Job) *structs.Evaluation {
	return &structs.Evaluation{
		ID:          uuid.NewString(),
		Namespace:   job.Namespace,
		Priority:    job.Priority,
		Type:        job.Type,
		TriggeredBy: structs.EvalTriggerJobRegister,
		JobID:       job.ID,
		Status:      structs.EvalStatusPending,
	}
}

// Deployment returns a running deployment of job's version with one canary
// awaiting promotion in group "web".
func Deployment(job *structs.Job) *structs.Deployment {
	return &structs.Deployment{
		ID:             uuid.NewString(),
		Namespace:      job.Namespace,
		JobID:          job.ID,
		JobVersion:     job.Version,
		JobCreateIndex: job.CreateIndex,
		TaskGroups: map[string]*structs.DeploymentState{
			"web": {DesiredCanaries: 1, DesiredTotal: 2},
		},
		Status:            structs.DeploymentStatusRunning,
		StatusDescription: structs.DeploymentStatusDescriptionRunningNeedsPromotion,
	}
}
