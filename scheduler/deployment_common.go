package scheduler

import (
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// What the system and generic reconcilers (system_deployment.go,
// generic_deployment.go) both decide about deployments.

// retireDeployment decides about cur, the job's latest deployment (or
// nil), before the job's version is deployed: matches reports whether cur
// is the deployment of job's version and registration. updates cancel cur
// when it is active and job (the current version, nil when stopped or
// purged) is stopped ("Cancelled because job is stopped") or cur is of
// another version or an earlier registration of the job ("Cancelled due to
// newer version of job"); an inactive deployment of another version is
// left as it is.
func retireDeployment(cur *structs.Deployment, job *structs.Job) (matches bool, updates []*structs.DeploymentStatusUpdate) {
	if job == nil {
		if cur != nil && cur.Active() {
			return false, []*structs.DeploymentStatusUpdate{cancel(cur, structs.DeploymentStatusDescriptionStoppedJob)}
		}
		return false, nil
	}
	matches = cur != nil && cur.JobVersion == job.Version && cur.JobCreateIndex == job.CreateIndex
	if cur != nil && !matches && cur.Active() {
		updates = append(updates, cancel(cur, structs.DeploymentStatusDescriptionNewerJob))
	}
	return matches, updates
}

// newDeployment returns a running deployment of job without an ID.
func newDeployment(job *structs.Job) *structs.Deployment {
	return &structs.Deployment{
		Namespace:          job.Namespace,
		JobID:              job.ID,
		JobVersion:         job.Version,
		JobModifyIndex:     job.JobModifyIndex,
		JobSpecModifyIndex: job.JobModifyIndex,
		JobCreateIndex:     job.CreateIndex,
		TaskGroups:         map[string]*structs.DeploymentState{},
		Status:             structs.DeploymentStatusRunning,
		StatusDescription:  structs.DeploymentStatusDescriptionRunning,
	}
}

// newDeploymentState copies tg's update block into a group state.
// RequireProgressBy is now + ProgressDeadline; a zero deadline (none) leaves
// it zero.
func newDeploymentState(tg *structs.TaskGroup, now time.Time) *structs.DeploymentState {
	st := &structs.DeploymentState{
		AutoRevert:       tg.Update.AutoRevert,
		AutoPromote:      tg.Update.AutoPromote,
		ProgressDeadline: tg.Update.ProgressDeadline,
	}
	if st.ProgressDeadline > 0 {
		st.RequireProgressBy = now.Add(st.ProgressDeadline)
	}
	return st
}

// copyDeployment is d.Copy() that tolerates nil group states (dropped:
// gating recreates them) instead of panicking.
func copyDeployment(d *structs.Deployment) *structs.Deployment {
	c := *d
	c.TaskGroups = make(map[string]*structs.DeploymentState, len(d.TaskGroups))
	for k, v := range d.TaskGroups {
		if v != nil {
			c.TaskGroups[k] = v
		}
	}
	return c.Copy()
}

// cancel is the status update that cancels d with description desc.
func cancel(d *structs.Deployment, desc string) *structs.DeploymentStatusUpdate {
	return &structs.DeploymentStatusUpdate{
		DeploymentID:      d.ID,
		Status:            structs.DeploymentStatusCancelled,
		StatusDescription: desc,
	}
}
