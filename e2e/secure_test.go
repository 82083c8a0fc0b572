package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// droverSecure runs the CLI against addr over mutual TLS (the NOMAD_*
// certificate variables) with NOMAD_TOKEN set to token.
func droverSecure(t testing.TB, addr string, pki *tlsPKI, token string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(droverBin, args...)
	cmd.Env = append(os.Environ(), "NOMAD_ADDR="+addr, "NOMAD_TOKEN="+token, "NOMAD_NAMESPACE=",
		"NOMAD_CACERT="+pki.ca(), "NOMAD_CLIENT_CERT="+pki.cert("cli"), "NOMAD_CLIENT_KEY="+pki.key("cli"))
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	require.NoError(t, err)
	return 0, string(out)
}

// secureClient is an API client of p over mutual TLS with token.
func secureClient(t testing.TB, p *agentProc, pki *tlsPKI, token string) *api.Client {
	t.Helper()
	c, err := api.NewClient(&api.Config{Address: p.httpsAddr(), SecretID: token, TLSConfig: &api.TLSConfig{
		CACert: pki.ca(), ClientCert: pki.cert("cli"), ClientKey: pki.key("cli"),
	}})
	require.NoError(t, err)
	return c
}

// TestSecureClusterDeploymentStory runs the system-job deployment story on
// a cluster with everything on: three servers and two clients with mutual
// TLS (HTTPS API, verify_server_hostname, verify_https_client) and ACLs.
// A management token drives the rollout through the CLI: version 0 becomes
// stable, version 1 goes to a canary that is promoted, and a broken
// version 2 fails and auto-reverts to version 1's spec. Anonymous requests
// and a read-only token are refused every change, and an expired token
// everything.
func TestSecureClusterDeploymentStory(t *testing.T) {
	start := time.Now()
	pki := newTLSPKI(t, "server", "client", "cli")
	httpPorts := []int{freePort(t), freePort(t), freePort(t)}
	rpcPorts := []int{freePort(t), freePort(t), freePort(t)}
	var joins, httpAddrs []string
	for i := range 3 {
		joins = append(joins, fmt.Sprintf("%q", fmt.Sprintf("127.0.0.1:%d", rpcPorts[i])))
		httpAddrs = append(httpAddrs, fmt.Sprintf("%q", fmt.Sprintf("127.0.0.1:%d", httpPorts[i])))
	}
	acl := "acl {\n  enabled = true\n}\n"
	// Servers allow short-lived tokens, so that one expires during the test.
	serverACL := "acl {\n  enabled = true\n  token_min_expiration_ttl = \"1s\"\n}\n"
	serverBody := fmt.Sprintf(`server {
  enabled          = true
  bootstrap_expect = 3
  server_join {
    retry_join = [%s]
  }
}
`, strings.Join(joins, ", ")) + serverACL + tlsBlock(pki, pki, "server")
	var servers []*agentProc
	for i := range 3 {
		servers = append(servers, startTLSAgent(t, fmt.Sprintf("server-%d", i+1), serverBody, httpPorts[i], rpcPorts[i]))
	}
	anon := tlsClient(t, servers[2], pki)
	var root *api.ACLToken
	require.Eventually(t, func() bool {
		var err error
		root, _, err = anon.ACLTokens().Bootstrap(nil) // through whichever server: followers forward
		return err == nil
	}, 30*time.Second, 200*time.Millisecond, "the secured servers never elected a leader that bootstraps ACLs")
	mgmt := secureClient(t, servers[0], pki, root.SecretID)

	clientBody := fmt.Sprintf(`client {
  enabled = true
  servers = [%s]
}
plugin "raw_exec" {
  config {
    enabled = true
  }
}
`, strings.Join(httpAddrs, ", ")) + acl + tlsBlock(pki, pki, "client")
	for i := 1; i <= 2; i++ {
		startTLSAgent(t, fmt.Sprintf("client-%d", i), clientBody, freePort(t), freePort(t))
	}
	waitReadyNodes(t, mgmt, 2)

	_, err := mgmt.ACLPolicies().Upsert(&api.ACLPolicy{Name: "ro", Rules: `namespace "*" { policy = "read" }
node { policy = "read" }`}, nil)
	require.NoError(t, err)
	ro, _, err := mgmt.ACLTokens().Create(&api.ACLToken{Name: "ro", Type: "client", Policies: []string{"ro"}}, nil)
	require.NoError(t, err)
	shortLived, _, err := mgmt.ACLTokens().Create(&api.ACLToken{Name: "short", Type: "management", ExpirationTTL: 3 * time.Second}, nil)
	require.NoError(t, err)
	_, _, err = secureClient(t, servers[2], pki, shortLived.SecretID).Nodes().List(nil)
	require.NoError(t, err, "a token works until it expires")

	jobFile := writeJobFile(t, deployJobHCL)
	addr := servers[1].httpsAddr()
	run := func(args ...string) (int, string) {
		return droverSecure(t, addr, pki, root.SecretID, append(append([]string{"job", "run"}, args...), jobFile)...)
	}

	// Anonymous and read-only callers change nothing.
	code, out := droverSecure(t, addr, pki, "", "job", "run", "-var", "version=0", jobFile)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "Permission denied")
	code, out = droverSecure(t, addr, pki, ro.SecretID, "job", "run", "-var", "version=0", jobFile)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "Permission denied")

	// Version 0 rolls out and becomes stable.
	code, out = run("-var", "version=0")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Deployment completed successfully")
	waitDeployment(t, mgmt, 0, "successful")

	// Version 1: one canary of two nodes; the read-only token reads the
	// deployment but cannot promote it; the management token does.
	code, out = run("-detach", "-var", "version=1", "-var", "canary=50")
	require.Equal(t, 0, code, out)
	var d *api.Deployment
	require.Eventually(t, func() bool {
		d = latestDeployment(t, mgmt)
		return d != nil && d.JobVersion == 1 && d.TaskGroups["web"].HealthyAllocs == 1
	}, 60*time.Second, 200*time.Millisecond, "the canary never turned healthy")
	require.Equal(t, 1, d.TaskGroups["web"].DesiredCanaries)
	code, out = droverSecure(t, addr, pki, ro.SecretID, "deployment", "status", d.ID)
	require.Equal(t, 0, code, out)
	code, out = droverSecure(t, addr, pki, ro.SecretID, "deployment", "promote", d.ID)
	require.NotEqual(t, 0, code, out)
	require.Contains(t, out, "Permission denied")
	code, out = droverSecure(t, addr, pki, root.SecretID, "deployment", "promote", d.ID)
	require.Equal(t, 0, code, out)
	waitDeployment(t, mgmt, 1, "successful")
	require.Equal(t, map[uint64]int{1: 2}, liveVersions(t, mgmt))

	// Version 2 is broken: its deployment fails and auto-reverts to
	// version 1's spec (version 3), which rolls out to success.
	code, out = run("-var", "version=2", "-var", "command=exit 1")
	require.Equal(t, 1, code, out)
	waitDeployment(t, mgmt, 3, "successful")
	job, _, err := mgmt.Jobs().Info("web", nil)
	require.NoError(t, err)
	require.Equal(t, "1", job.TaskGroups[0].Tasks[0].Env["VERSION"], "version 3 is version 1's spec")
	require.Eventually(t, func() bool {
		v := liveVersions(t, mgmt)
		return v[3] == 2 && len(v) == 1
	}, 60*time.Second, 200*time.Millisecond, "every node back on the stable spec")

	// Anonymous reads stay refused throughout, and so is an expired token,
	// management or not.
	_, _, err = anon.Jobs().List(nil)
	requireHTTPStatus(t, err, http.StatusForbidden)
	time.Sleep(time.Until(*shortLived.ExpirationTime))
	_, _, err = secureClient(t, servers[2], pki, shortLived.SecretID).Jobs().List(nil)
	requireHTTPStatus(t, err, http.StatusForbidden)
	require.Contains(t, err.Error(), "ACL token expired")
	t.Logf("deployment story with mutual TLS and ACLs on: %s", time.Since(start).Round(time.Millisecond))
}
