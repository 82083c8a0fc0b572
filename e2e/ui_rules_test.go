package e2e

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// uiRulesJobHCL is a system job over dc1 and dc2 whose rollouts run one
// canary per datacenter and pause when a canary restarts.
func uiRulesJobHCL(version, command string) string {
	return fmt.Sprintf(`
job "web" {
  type        = "system"
  datacenters = ["dc1", "dc2"]
  update {
    max_parallel      = 2
    health_check      = "task_states"
    min_healthy_time  = "1s"
    healthy_deadline  = "20s"
    progress_deadline = "1m"
  }
  group "web" {
    meta = {
      VERSION                = %q
      "drover.canary_count"  = "2"
      "drover.canary_spread" = "${node.datacenter}"
      "drover.auto_pause_on" = "restarts>0"
    }
    restart {
      attempts = 8
      interval = "10m"
      delay    = "200ms"
      mode     = "fail"
    }
    task "server" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", %q]
      }
      resources {
        cpu    = 20
        memory = 16
      }
    }
  }
}
`, version, command)
}

// TestUIShowsCanaryTargetsAndPauseReason: the rollout view lists the
// version's rollout rules in words, the nodes its canaries are on with
// their datacenters (the same nodes the API names), and, when a canary's
// restart pauses the deployment, the status and the reason the server
// gave.
func TestUIShowsCanaryTargetsAndPauseReason(t *testing.T) {
	ctx := newBrowser(t, 1200, 820)
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	for i := 1; i <= 4; i++ {
		dc := fmt.Sprintf("dc%d", (i+1)/2)
		newClientAgentWith(t, fmt.Sprintf("ui-%s-%d", dc, i), "", fmt.Sprintf("datacenter = %q", dc), srv.httpHostPort())
	}
	waitReadyNodes(t, c, 4)
	run1 := func(hcl string, args ...string) {
		code, out := drover(t, srv.httpAddr(), append(append([]string{"job", "run"}, args...), writeJobFile(t, hcl))...)
		require.Equal(t, 0, code, out)
	}
	run1(uiRulesJobHCL("0", "exec sleep 3600"))
	waitDeployment(t, c, 0, "successful")

	// Version 1's canaries crash three times in all before they run: the
	// first restart pauses the deployment.
	run1(uiRulesJobHCL("1", crashThriceCommand(t)), "-detach")
	d := waitDeployment(t, c, 1, "paused")
	require.True(t, strings.HasPrefix(d.StatusDescription, "Deployment paused: restarts "), d.StatusDescription)
	var want []string
	for _, id := range d.TaskGroups["web"].PlacedCanaries {
		a, _, err := c.Allocations().Info(id, nil)
		require.NoError(t, err)
		n, _, err := c.Nodes().Info(a.NodeID, nil)
		require.NoError(t, err)
		want = append(want, fmt.Sprintf("%s (%s)", n.Name, n.Datacenter))
	}
	sort.Strings(want)
	require.Len(t, want, 2)

	run(t, ctx, 20*time.Second, chromedp.Navigate(srv.httpAddr()+"/ui/jobs/web@default/rollout"))
	waitJS(t, ctx, 15*time.Second, `document.getElementById('dep-status').textContent === 'paused' &&
		!!document.getElementById('dep-canary-nodes')`)
	require.Equal(t, d.StatusDescription, evalJS[string](t, ctx, `document.getElementById('dep-description').textContent`),
		"the view shows why the deployment paused")
	require.Equal(t, "Canaries on: "+strings.Join(want, ", "),
		evalJS[string](t, ctx, `document.getElementById('dep-canary-nodes').textContent`), "the view's canary nodes are the API's")
	rules := evalJS[map[string]string](t, ctx, `Object.fromEntries([...document.querySelectorAll('#dep-rules .rule')].map((r) => [r.dataset.key, r.textContent]))`)
	require.Equal(t, map[string]string{
		"drover.auto_pause_on": "web: pause when restarts>0",
		"drover.canary_count":  "web: canary nodes 2",
		"drover.canary_spread": "web: canaries spread over distinct values of ${node.datacenter}",
	}, rules)
	screenshot(t, ctx, "rollout-rules.png")
}
