package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// canaryTargetJobHCL is a system job over dc1 and dc2 whose rollouts run
// two canaries, one per datacenter (group meta drover.canary_count and
// drover.canary_spread; update { canary } stays 0).
const canaryTargetJobHCL = `
variable "version" {
  type = string
}
job "web" {
  type        = "system"
  datacenters = ["dc1", "dc2"]
  update {
    max_parallel      = 2
    health_check      = "task_states"
    min_healthy_time  = "1s"
    healthy_deadline  = "15s"
    progress_deadline = "1m"
  }
  group "web" {
    meta = {
      "drover.canary_count"  = "2"
      "drover.canary_spread" = "${node.datacenter}"
    }
    task "server" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo version ${var.version}; exec sleep 3600"]
      }
      resources {
        cpu    = 20
        memory = 16
      }
    }
  }
}
`

// TestSystemCanaryTargeting: four clients, two in dc1 and two in dc2; a
// new version runs exactly one canary in each datacenter, `deployment
// status` names them, nothing else moves until promotion, and promotion
// finishes the rollout on every node.
func TestSystemCanaryTargeting(t *testing.T) {
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	for i := 1; i <= 4; i++ {
		dc := fmt.Sprintf("dc%d", (i+1)/2)
		newClientAgentWith(t, fmt.Sprintf("canary-%s-%d", dc, i), "", fmt.Sprintf("datacenter = %q", dc), srv.httpHostPort())
	}
	waitReadyNodes(t, c, 4)
	dcOf := map[string]string{}
	nodes, _, err := c.Nodes().List(nil)
	require.NoError(t, err)
	for _, n := range nodes {
		dcOf[n.ID] = n.Datacenter
	}
	jobFile := writeJobFile(t, canaryTargetJobHCL)
	bad := writeJobFile(t, strings.Replace(canaryTargetJobHCL, `"drover.canary_count"  = "2"`, `"drover.canary_count"  = "two"`, 1))
	code, out := drover(t, srv.httpAddr(), "job", "run", "-var", "version=0", bad)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, `meta "drover.canary_count": must be a positive integer, got "two"`)

	code, out = drover(t, srv.httpAddr(), "job", "run", "-var", "version=0", jobFile)
	require.Equal(t, 0, code, out)
	require.Equal(t, map[uint64]int{0: 4}, liveVersions(t, c), "version 0 gets no canaries")

	code, out = drover(t, srv.httpAddr(), "job", "run", "-detach", "-var", "version=1", jobFile)
	require.Equal(t, 0, code, out)
	var d *api.Deployment
	require.Eventually(t, func() bool {
		d = latestDeployment(t, c)
		return d != nil && d.JobVersion == 1 && d.TaskGroups["web"].HealthyAllocs == 2
	}, 20*time.Second, 100*time.Millisecond, "two healthy canaries (last: %+v)", d)
	st := d.TaskGroups["web"]
	require.Equal(t, 2, st.DesiredCanaries, "drover.canary_count")
	require.Len(t, st.PlacedCanaries, 2)
	require.Equal(t, "Deployment is running but requires manual promotion", d.StatusDescription)
	require.Equal(t, map[uint64]int{0: 2, 1: 2}, liveVersions(t, c), "only the canaries run version 1")
	canaryDCs := map[string]int{}
	for _, id := range st.PlacedCanaries {
		a, _, err := c.Allocations().Info(id, nil)
		require.NoError(t, err)
		canaryDCs[dcOf[a.NodeID]]++
	}
	require.Equal(t, map[string]int{"dc1": 1, "dc2": 1}, canaryDCs, "one canary per datacenter")

	code, out = drover(t, srv.httpAddr(), "deployment", "status", d.ID)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Canaries")
	for _, id := range st.PlacedCanaries {
		require.Contains(t, out, id[:8], "the status lists canary %s", id)
	}
	require.Regexp(t, `(?m)^web\s+\S+\s+\S+\s+canary-dc1-\d\s+dc1\s+running\s+true`, out)
	require.Regexp(t, `(?m)^web\s+\S+\s+\S+\s+canary-dc2-\d\s+dc2\s+running\s+true`, out)

	code, out = drover(t, srv.httpAddr(), "deployment", "promote", d.ID)
	require.Equal(t, 0, code, out)
	require.Eventually(t, func() bool {
		d = latestDeployment(t, c)
		return d.ID != "" && d.JobVersion == 1 && d.Status == "successful"
	}, 20*time.Second, 100*time.Millisecond, "promotion finishes the rollout (last: %+v)", d)
	require.Equal(t, map[uint64]int{1: 4}, liveVersions(t, c), "every node runs version 1")
}
