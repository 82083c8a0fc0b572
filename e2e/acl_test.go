package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// droverAs runs the CLI against addr with NOMAD_TOKEN set to token.
func droverAs(t testing.TB, addr, token string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(droverBin, args...)
	cmd.Env = append(os.Environ(), "NOMAD_ADDR="+addr, "NOMAD_TOKEN="+token, "NOMAD_NAMESPACE=")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	require.NoError(t, err)
	return 0, string(out)
}

// newACLCluster starts three servers with ACLs on, joined to each other.
func newACLCluster(t *testing.T) []*agentProc {
	t.Helper()
	type ports struct{ http, rpc int }
	var ps []ports
	var rpcAddrs []string
	for range 3 {
		p := ports{freePort(t), freePort(t)}
		ps = append(ps, p)
		rpcAddrs = append(rpcAddrs, fmt.Sprintf("127.0.0.1:%d", p.rpc))
	}
	var servers []*agentProc
	for i, p := range ps {
		var others []string
		for j, addr := range rpcAddrs {
			if j != i {
				others = append(others, addr)
			}
		}
		spec := serverSpec{name: fmt.Sprintf("s%d", i+1), bootstrapExpect: 3, retryJoin: others,
			extra: "min_heartbeat_ttl = \"2s\"\n  heartbeat_grace = \"2s\"", top: "acl {\n  enabled = true\n}"}
		servers = append(servers, newServerOnPorts(t, spec, p.http, p.rpc))
	}
	waitLeader(t, servers...)
	return servers
}

func tokenClient(t testing.TB, addr, secret string) *api.Client {
	t.Helper()
	c, err := api.NewClient(&api.Config{Address: addr, SecretID: secret})
	require.NoError(t, err)
	return c
}

// TestACLCluster: three servers and two clients with ACLs on. Anonymous
// requests are refused everywhere; a read-only token reads but cannot
// change; a token for namespace a neither sees nor touches b while the same
// job ID lives in both; the canary deployment story runs through the CLI
// with NOMAD_TOKEN.
func TestACLCluster(t *testing.T) {
	servers := newACLCluster(t)
	s1, s2, s3 := servers[0], servers[1], servers[2]

	// Bootstrap through any server (a follower forwards it).
	anon := s3.client(t)
	root, _, err := anon.ACLTokens().Bootstrap(nil)
	require.NoError(t, err)
	mgmt := tokenClient(t, s2.httpAddr(), root.SecretID)
	for i := 1; i <= 2; i++ {
		newClientAgent(t, fmt.Sprintf("client-%d", i), s1.httpHostPort(), s2.httpHostPort(), s3.httpHostPort())
	}
	waitReadyNodes(t, mgmt, 2)

	for _, s := range servers {
		_, _, err := s.client(t).Jobs().List(nil)
		requireHTTPStatus(t, err, http.StatusForbidden)
		_, _, err = s.client(t).Nodes().List(nil)
		requireHTTPStatus(t, err, http.StatusForbidden)
	}

	for _, ns := range []string{"a", "b"} {
		code, out := droverAs(t, s1.httpAddr(), root.SecretID, "namespace", "apply", ns)
		require.Equal(t, 0, code, out)
	}
	writePolicy := func(name, rules string) string {
		_, err := mgmt.ACLPolicies().Upsert(&api.ACLPolicy{Name: name, Rules: rules}, nil)
		require.NoError(t, err)
		tok, _, err := mgmt.ACLTokens().Create(&api.ACLToken{Name: name, Type: "client", Policies: []string{name}}, nil)
		require.NoError(t, err)
		return tok.SecretID
	}
	roSecret := writePolicy("ro", `namespace "*" { policy = "read" }`)
	aSecret := writePolicy("team-a", `namespace "a" { policy = "write" }`)

	jobFile := writeJobFile(t, deployJobHCL)
	for _, ns := range []string{"a", "b"} {
		code, out := droverAs(t, s3.httpAddr(), root.SecretID, "job", "run", "-namespace", ns, "-var", "version=0", jobFile)
		require.Equal(t, 0, code, out)
		require.Contains(t, out, "Deployment completed successfully")
	}

	// Read-only: reads jobs and deployments, changes nothing.
	code, out := droverAs(t, s2.httpAddr(), roSecret, "job", "status", "-namespace", "b", "web")
	require.Equal(t, 0, code, out)
	ro := tokenClient(t, s1.httpAddr(), roSecret)
	dB, _, err := ro.Jobs().LatestDeployment("web", &api.QueryOptions{Namespace: "b"})
	require.NoError(t, err)
	code, out = droverAs(t, s2.httpAddr(), roSecret, "job", "stop", "-namespace", "b", "-detach", "web")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "Permission denied")
	code, out = droverAs(t, s2.httpAddr(), roSecret, "job", "run", "-namespace", "b", "-var", "version=9", jobFile)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "Permission denied")
	for _, args := range [][]string{{"deployment", "fail", dB.ID}, {"deployment", "pause", dB.ID}, {"deployment", "promote", dB.ID},
		{"job", "revert", "-namespace", "b", "web", "0"}} {
		code, out = droverAs(t, s3.httpAddr(), roSecret, args...)
		require.Equal(t, 1, code, "%v: %s", args, out)
		require.Contains(t, out, "Permission denied", "%v", args)
	}

	// Namespace a's token: sees a only, touches nothing in b.
	ac := tokenClient(t, s3.httpAddr(), aSecret)
	jobs, _, err := ac.Jobs().List(&api.QueryOptions{Namespace: "*"})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	require.Equal(t, "a", jobs[0].Namespace)
	code, out = droverAs(t, s1.httpAddr(), aSecret, "job", "status", "-namespace", "b", "web")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "Permission denied")
	code, out = droverAs(t, s1.httpAddr(), aSecret, "job", "stop", "-namespace", "b", "-detach", "web")
	require.Equal(t, 1, code, out)
	code, out = droverAs(t, s1.httpAddr(), aSecret, "deployment", "fail", dB.ID)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "Permission denied")
	jb, _, err := mgmt.Jobs().Info("web", &api.QueryOptions{Namespace: "b"})
	require.NoError(t, err)
	require.False(t, *jb.Stop, "b's job untouched")

	// The canary story in namespace a, driven by a's token through the CLI.
	code, out = droverAs(t, s2.httpAddr(), aSecret, "job", "run", "-namespace", "a", "-detach",
		"-var", "version=1", "-var", "canary=50", jobFile)
	require.Equal(t, 0, code, out)
	var d *api.Deployment
	require.Eventually(t, func() bool {
		d, _, err = ac.Jobs().LatestDeployment("web", &api.QueryOptions{Namespace: "a"})
		return err == nil && d != nil && d.JobVersion == 1 && d.TaskGroups["web"].HealthyAllocs == 1
	}, 60*time.Second, 200*time.Millisecond)
	require.Equal(t, "Deployment is running but requires manual promotion", d.StatusDescription)
	code, out = droverAs(t, s3.httpAddr(), aSecret, "deployment", "promote", d.ID)
	require.Equal(t, 0, code, out)
	require.Eventually(t, func() bool {
		d, _, err = ac.Deployments().Info(d.ID, nil)
		return err == nil && d.Status == "successful"
	}, 60*time.Second, 200*time.Millisecond, "deployment after promotion: %+v", d)

	// Management does it all, b included.
	code, out = droverAs(t, s1.httpAddr(), root.SecretID, "job", "stop", "-namespace", "b", "-detach", "web")
	require.Equal(t, 0, code, out)
}

func requireHTTPStatus(t testing.TB, err error, code int) {
	t.Helper()
	var ure api.UnexpectedResponseError
	require.ErrorAs(t, err, &ure)
	require.Equal(t, code, ure.StatusCode(), ure.Body())
}
