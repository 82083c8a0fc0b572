package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestClientIntroductionStrict: a server with ACLs on and
// client_introduction { enforcement = "strict" } refuses a client started
// without an introduction token (it never shows in node status, and the
// refusal is counted), and admits clients given one by `drover node intro
// create`, through NOMAD_CLIENT_INTRO_TOKEN or client.intro_token.
func TestClientIntroductionStrict(t *testing.T) {
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1,
		extra: "client_introduction {\n    enforcement = \"strict\"\n  }",
		top:   "acl {\n  enabled = true\n}"})
	waitLeader(t, srv)
	root, _, err := srv.client(t).ACLTokens().Bootstrap(nil)
	require.NoError(t, err)
	mgmt := tokenClient(t, srv.httpAddr(), root.SecretID)

	intruder := newClientAgent(t, "intruder", srv.httpHostPort())
	require.Eventually(t, func() bool {
		return strings.Contains(intruder.logs(), "requires a valid client introduction token")
	}, 30*time.Second, 100*time.Millisecond, "the client logs the server's refusal")
	require.Contains(t, intruder.logs(), `client_introduction enforcement is \"strict\"`)

	// Tokens from the CLI, scoped to each node's name.
	tokenFor := func(name string) string {
		code, out := droverAs(t, srv.httpAddr(), root.SecretID, "node", "intro", "create", "-node-name", name, "-ttl", "10m")
		require.Equal(t, 0, code, out)
		require.Contains(t, out, "Successfully generated client introduction token:")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return strings.TrimSpace(lines[len(lines)-1])
	}
	byConfig := tokenFor("by-config")
	newClientAgentWith(t, "by-config", "intro_token = \""+byConfig+"\"", "", srv.httpHostPort())
	t.Setenv("NOMAD_CLIENT_INTRO_TOKEN", tokenFor("by-env"))
	newClientAgent(t, "by-env", srv.httpHostPort())
	waitReadyNodes(t, mgmt, 2)

	nodes, _, err := mgmt.Nodes().List(nil)
	require.NoError(t, err)
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	require.ElementsMatch(t, []string{"by-config", "by-env"}, names)
	code, out := droverAs(t, srv.httpAddr(), root.SecretID, "node", "status")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "by-env")
	require.NotContains(t, out, "intruder")

	// The intruder is still refused at its retries, and each is counted.
	req, err := http.NewRequest("GET", srv.httpAddr()+"/v1/metrics?format=prometheus", nil)
	require.NoError(t, err)
	req.Header.Set("X-Nomad-Token", root.SecretID)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Contains(t, string(body), `drover_client_introduction_unauthenticated_total{outcome="refused"}`)
}
