package chaos

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// DeploymentViolations checks "a deployment never succeeds while a node of
// its version is unhealthy" for d, read together with the allocations of
// its job (allocs, read after d) and the job's nodes (by ID; a system job
// runs on each). It returns nothing unless d is successful; then every
// allocation of d's version that the servers want running must be running
// and marked healthy, and every node must have one. Each violation names
// the deployment and the allocation (or the node) at fault.
//
// The caller reads d and allocs while nothing newer of the job is
// registered: a later version's rollout stops allocations of d's version
// legitimately.
func DeploymentViolations(d *api.Deployment, allocs []*api.AllocationListStub, nodes []string) []string {
	if d == nil || d.Status != api.DeploymentStatusSuccessful {
		return nil
	}
	var out []string
	good := map[string]bool{}
	for _, a := range allocs {
		if a.JobVersion != d.JobVersion || a.DesiredStatus != api.AllocDesiredStatusRun {
			continue
		}
		healthy := a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil && *a.DeploymentStatus.Healthy
		if a.ClientStatus == api.AllocClientStatusRunning && healthy {
			good[a.NodeID] = true
			continue
		}
		health := "unset"
		if a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil {
			health = fmt.Sprint(*a.DeploymentStatus.Healthy)
		}
		out = append(out, fmt.Sprintf("deployment %s (job %s v%d) is successful but its allocation %s on node %s is %s, healthy %s",
			d.ID, d.JobID, d.JobVersion, a.ID, shortID(a.NodeID), a.ClientStatus, health))
	}
	missing := []string{}
	for _, n := range nodes {
		if !good[n] {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	for _, n := range missing {
		var live []string
		for _, a := range allocs {
			if a.NodeID == n && a.DesiredStatus == api.AllocDesiredStatusRun {
				live = append(live, fmt.Sprintf("%s v%d %s", shortID(a.ID), a.JobVersion, a.ClientStatus))
			}
		}
		out = append(out, fmt.Sprintf("deployment %s (job %s v%d) is successful but node %s runs no healthy allocation of v%d (it runs: %s)",
			d.ID, d.JobID, d.JobVersion, shortID(n), d.JobVersion, strings.Join(live, ", ")))
	}
	return out
}

// shortID is the first 8 characters of an ID.
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
