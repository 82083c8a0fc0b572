package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
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
	return rolloutJob{
		Datacenters: []string{"dc1", "dc2"}, MaxParallel: 2, Version: version, Command: command,
		Meta: map[string]string{
			"drover.canary_count":  "2",
			"drover.canary_spread": "${node.datacenter}",
			"drover.auto_pause_on": "restarts>0",
		},
	}.HCL()
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

// TestUIShowsGateState: a webhook gate that answers 503 pauses the
// deployment before its second wave; the rollout view shows what the
// group waits for, the webhook's answer and which gate paused it, and
// follows the deployment to success once the webhook answers 200.
func TestUIShowsGateState(t *testing.T) {
	ctx := newBrowser(t, 1200, 820)
	hook := &hookRecorder{got: make(chan struct{}, 1)}
	hook.status.Store(http.StatusServiceUnavailable)
	hs := httptest.NewServer(hook)
	t.Cleanup(hs.Close)
	srv, c := gateServer(t, "", 2)
	meta := fmt.Sprintf(`      "drover.gate_webhook" = %q`, hs.URL+"/gate")
	for _, version := range []string{"0", "1"} {
		code, out := drover(t, srv.httpAddr(), "job", "run", "-detach",
			writeJobFile(t, gateJobHCL(meta, "/bin/sh", "-c", "exec sleep 360"+version)))
		require.Equal(t, 0, code, out)
		if version == "0" {
			waitDeployment(t, c, 0, "successful")
		}
	}
	d := waitDeployment(t, c, 1, "paused")

	run(t, ctx, 20*time.Second, chromedp.Navigate(srv.httpAddr()+"/ui/jobs/web@default/rollout"))
	waitJS(t, ctx, 15*time.Second, `document.getElementById('dep-status').textContent === 'paused' &&
		!!document.querySelector('#dep-rules .gate[data-group="web"]')`)
	require.Equal(t, d.StatusDescription, evalJS[string](t, ctx, `document.getElementById('dep-description').textContent`))
	require.Equal(t, "web gates: waiting for wave 2; last webhook answer: fail (answered 503: maintenance window); paused by the webhook gate",
		evalJS[string](t, ctx, `document.querySelector('#dep-rules .gate[data-group="web"]').textContent`))
	screenshot(t, ctx, "rollout-gate.png")

	// The page follows the stream: the webhook's 200 resumes the
	// deployment and the gate row says it waits for nothing.
	hook.status.Store(http.StatusOK)
	waitDeployment(t, c, 1, "successful")
	waitJS(t, ctx, 30*time.Second, `document.getElementById('dep-status').textContent === 'successful' &&
		document.querySelector('#dep-rules .gate[data-group="web"]').textContent.startsWith('web gates: waiting for nothing')`)
}
