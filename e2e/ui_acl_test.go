package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// TestUIACL drives the web UI against an agent with ACLs on: the page asks
// for a token once, keeps it in the tab's session storage and reads with
// it (the event stream included) on every page; an action the token may
// not do shows Nomad's refusal and changes nothing; a token entered
// through the token button is used for the next action. With the event
// stream blocked, the rollout view falls back to blocking queries.
func TestUIACL(t *testing.T) {
	ctx := newBrowser(t, 1200, 820)
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1, top: "acl {\n  enabled = true\n}"})
	waitLeader(t, srv)
	root, _, err := srv.client(t).ACLTokens().Bootstrap(nil)
	require.NoError(t, err)
	mgmt := tokenClient(t, srv.httpAddr(), root.SecretID)
	_, err = mgmt.ACLPolicies().Upsert(&api.ACLPolicy{Name: "ro", Rules: `namespace "*" { policy = "read" }
node { policy = "read" }`}, nil)
	require.NoError(t, err)
	ro, _, err := mgmt.ACLTokens().Create(&api.ACLToken{Name: "ro", Type: "client", Policies: []string{"ro"}}, nil)
	require.NoError(t, err)
	newClientAgent(t, "client-1", srv.httpHostPort())
	waitReadyNodes(t, mgmt, 1)
	jobFile := writeJobFile(t, deployJobHCL)
	code, out := droverAs(t, srv.httpAddr(), root.SecretID, "job", "run", "-var", "version=0", jobFile)
	require.Equal(t, 0, code, out)
	// Version 1 with a canary: the deployment waits for promotion.
	code, out = droverAs(t, srv.httpAddr(), root.SecretID, "job", "run", "-detach", "-var", "version=1", "-var", "canary=50", jobFile)
	require.Equal(t, 0, code, out)
	deployment := func() *api.Deployment {
		d, _, err := mgmt.Jobs().LatestDeployment("web", nil)
		require.NoError(t, err)
		return d
	}
	require.Eventually(t, func() bool { d := deployment(); return d != nil && d.JobVersion == 1 && d.Status == "running" },
		30*time.Second, 200*time.Millisecond)

	// Refused without a token, the page asks for one, once.
	run(t, ctx, 20*time.Second, chromedp.Navigate(srv.httpAddr()+"/ui/jobs/web/rollout"))
	waitJS(t, ctx, 10*time.Second, `document.getElementById('token-dialog').open &&
		document.getElementById('token-reason').textContent.includes('Permission denied')`)
	run(t, ctx, 10*time.Second, chromedp.SetValue(chromedp.ID("token-input"), ro.SecretID),
		chromedp.Click(chromedp.CSS(`#token-form button[value="save"]`)))
	waitJS(t, ctx, 15*time.Second, `window.droverRollout.deployment && window.droverRollout.deployment.version === 1 &&
		document.getElementById('dep-status').textContent === 'running' && window.droverRollout.cells.length === 1 &&
		window.droverRollout.live === 'stream'`)
	require.Equal(t, ro.SecretID, evalJS[string](t, ctx, `sessionStorage.getItem('drover.acl-token')`))

	// Kept for the session: other pages read with it without asking.
	run(t, ctx, 20*time.Second, chromedp.Navigate(srv.httpAddr()+"/ui/jobs"))
	waitJS(t, ctx, 10*time.Second, `(() => { const r = document.querySelector('#jobs-table tr[data-job="web"]');
		return r && r.textContent.includes('running') && !document.getElementById('token-dialog').open; })()`)
	run(t, ctx, 20*time.Second, chromedp.Navigate(srv.httpAddr()+"/ui/jobs/web/rollout"))
	waitJS(t, ctx, 10*time.Second, `window.droverRollout.deployment && window.droverRollout.live === 'stream' &&
		!document.getElementById('act-pause').hidden && !document.getElementById('token-dialog').open`)

	// A read-only token may not pause: the page shows Nomad's refusal, and
	// the deployment runs on.
	run(t, ctx, 10*time.Second, chromedp.Click(chromedp.ID("act-pause")))
	waitJS(t, ctx, 10*time.Second, `document.getElementById('flash').textContent === 'Pause refused: Permission denied'`)
	require.Equal(t, "running", deployment().Status)

	// A token that may, entered through the token button, is used for the
	// next click; the view, on the stream, shows the pause.
	run(t, ctx, 10*time.Second, chromedp.Click(chromedp.ID("token-button")))
	waitJS(t, ctx, 5*time.Second, `document.getElementById('token-dialog').open`)
	run(t, ctx, 10*time.Second, chromedp.SetValue(chromedp.ID("token-input"), root.SecretID),
		chromedp.Click(chromedp.CSS(`#token-form button[value="save"]`)))
	waitJS(t, ctx, 5*time.Second, fmt.Sprintf(`sessionStorage.getItem('drover.acl-token') === %q`, root.SecretID))
	run(t, ctx, 10*time.Second, chromedp.Click(chromedp.ID("act-pause")))
	require.Eventually(t, func() bool { return deployment().Status == "paused" }, 10*time.Second, 100*time.Millisecond,
		"the click with the management token paused the deployment")
	waitJS(t, ctx, 10*time.Second, `document.getElementById('dep-status').textContent === 'paused' &&
		document.getElementById('flash').textContent === 'Pause: done'`)

	// With the event stream blocked, the view falls back to blocking
	// queries on its read and still follows the resume clicked in it.
	_, err = chromedp.Call(ctx, network.SetBlockedURLs, network.SetBlockedURLsParams{
		URLPatterns: []*network.BlockPattern{{URLPattern: "*://*:*/v1/event/stream?*", Block: true}}})
	require.NoError(t, err)
	run(t, ctx, 20*time.Second, chromedp.Navigate(srv.httpAddr()+"/ui/jobs/web/rollout"))
	waitJS(t, ctx, 15*time.Second, `window.droverRollout.live === 'blocking' && !document.getElementById('act-resume').hidden`)
	run(t, ctx, 10*time.Second, chromedp.Click(chromedp.ID("act-resume")))
	require.Eventually(t, func() bool { return deployment().Status == "running" }, 10*time.Second, 100*time.Millisecond)
	waitJS(t, ctx, 10*time.Second, `document.getElementById('dep-status').textContent === 'running' && !document.getElementById('act-pause').hidden`)
}
