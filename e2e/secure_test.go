package e2e

import (
	"crypto/tls"
	"crypto/x509"
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
// and a read-only token are refused every change (register, stop,
// promote, fail, pause, revert), an expired token everything; a token for
// namespace a neither sees nor touches the same job ID in namespace b;
// plain HTTP and another CA's certificate get nothing.
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

	// The read-only token reads the job but cannot stop it.
	code, out = droverSecure(t, addr, pki, ro.SecretID, "job", "status", "web")
	require.Equal(t, 0, code, out)
	code, out = droverSecure(t, addr, pki, ro.SecretID, "job", "stop", "-detach", "web")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "Permission denied")

	// Version 1: one canary of two nodes; the read-only token reads the
	// deployment but cannot promote, fail or pause it; the management
	// token promotes it.
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
	for _, verb := range []string{"promote", "fail", "pause"} {
		code, out = droverSecure(t, addr, pki, ro.SecretID, "deployment", verb, d.ID)
		require.NotEqual(t, 0, code, "%s: %s", verb, out)
		require.Contains(t, out, "Permission denied", verb)
	}
	code, out = droverSecure(t, addr, pki, root.SecretID, "deployment", "promote", d.ID)
	require.Equal(t, 0, code, out)
	waitDeployment(t, mgmt, 1, "successful")
	require.Equal(t, map[uint64]int{1: 2}, liveVersions(t, mgmt))
	code, out = droverSecure(t, addr, pki, ro.SecretID, "job", "revert", "web", "0")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "Permission denied")

	// Namespaces: the same job ID in a and b; a's token sees and touches
	// only a.
	for _, ns := range []string{"a", "b"} {
		code, out = droverSecure(t, addr, pki, root.SecretID, "namespace", "apply", ns)
		require.Equal(t, 0, code, out)
		code, out = droverSecure(t, addr, pki, root.SecretID, "job", "run", "-detach", "-namespace", ns, "-var", "version=0", jobFile)
		require.Equal(t, 0, code, out)
	}
	_, err = mgmt.ACLPolicies().Upsert(&api.ACLPolicy{Name: "team-a", Rules: `namespace "a" { policy = "write" }`}, nil)
	require.NoError(t, err)
	teamA, _, err := mgmt.ACLTokens().Create(&api.ACLToken{Name: "team-a", Type: "client", Policies: []string{"team-a"}}, nil)
	require.NoError(t, err)
	seen, _, err := secureClient(t, servers[0], pki, teamA.SecretID).Jobs().List(&api.QueryOptions{Namespace: "*"})
	require.NoError(t, err)
	require.Len(t, seen, 1, "a's token sees only a's job")
	require.Equal(t, "a", seen[0].Namespace)
	code, out = droverSecure(t, addr, pki, teamA.SecretID, "job", "status", "-namespace", "b", "web")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "Permission denied")
	code, out = droverSecure(t, addr, pki, teamA.SecretID, "job", "stop", "-detach", "-namespace", "b", "web")
	require.Equal(t, 1, code, out)
	code, out = droverSecure(t, addr, pki, teamA.SecretID, "job", "stop", "-detach", "-namespace", "a", "web")
	require.Equal(t, 0, code, out)
	jb, _, err := mgmt.Jobs().Info("web", &api.QueryOptions{Namespace: "b"})
	require.NoError(t, err)
	require.False(t, *jb.Stop, "b's job untouched")
	code, out = droverSecure(t, addr, pki, root.SecretID, "job", "stop", "-detach", "-namespace", "b", "web")
	require.Equal(t, 0, code, out, "management does it all")

	// Plain HTTP gets no API answer, and another CA's certificate is
	// refused by the API and by the rpc port.
	if resp, err := http.Get(servers[0].httpAddr() + "/v1/jobs"); err == nil {
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	}
	foreign := newTLSPKI(t, "server", "cli")
	roots := x509.NewCertPool()
	caPEM, err := os.ReadFile(pki.ca())
	require.NoError(t, err)
	roots.AppendCertsFromPEM(caPEM)
	foreignCLI, err := tls.LoadX509KeyPair(foreign.cert("cli"), foreign.key("cli"))
	require.NoError(t, err)
	foreignServer, err := tls.LoadX509KeyPair(foreign.cert("server"), foreign.key("server"))
	require.NoError(t, err)
	require.True(t, handshakeRefused(t, servers[0].httpHostPort(), roots, foreignCLI, ""), "API accepted another CA's certificate")
	require.True(t, handshakeRefused(t, servers[0].rpcAddr(), roots, foreignServer, "\x02"), "rpc port accepted another CA's certificate")

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
