package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// identityJobHCL is a batch job in namespace a whose raw_exec task runs
// the drover CLI with its own workload identity: it reads its own job,
// tries a job of namespace b, and prints the token from the environment
// and from the file.
const identityJobHCL = `
job "idjob" {
  namespace = "a"
  type      = "batch"
  group "g" {
    task "t" {
      driver = "raw_exec"
      identity {
        env  = true
        file = true
      }
      env {
        NOMAD_ADDR = "%s"
      }
      config {
        command = "/bin/sh"
        args = ["-c", <<EOT
echo "ENV_TOKEN=$NOMAD_TOKEN"
echo "FILE_TOKEN=$(cat "$NOMAD_SECRETS_DIR/nomad_token")"
%s job status idjob 2>&1; echo "OWN_EXIT=$?"
%s job status -namespace b other 2>&1; echo "OTHER_EXIT=$?"
EOT
        ]
      }
      resources {
        cpu    = 50
        memory = 64
      }
    }
  }
}
`

const otherJobHCL = `
job "other" {
  namespace = "b"
  type      = "batch"
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
      }
    }
  }
}
`

// TestWorkloadIdentity: with ACLs on, a task with identity { env = true
// file = true } gets its JWT in NOMAD_TOKEN and secrets/nomad_token; with
// it the drover CLI inside the task reads its own job and is refused a job
// of another namespace; the JWT verifies against /.well-known/jwks.json.
// The client's own /v1/client/* endpoints refuse a caller without a token.
func TestWorkloadIdentity(t *testing.T) {
	start := time.Now()
	s1, cl, root, mgmt := aclServerAndClient(t, "client-1")
	for _, ns := range []string{"a", "b"} {
		code, out := droverAs(t, s1.httpAddr(), root.SecretID, "namespace", "apply", ns)
		require.Equal(t, 0, code, out)
	}
	code, out := droverAs(t, s1.httpAddr(), root.SecretID, "job", "run", "-detach", writeJobFile(t, otherJobHCL))
	require.Equal(t, 0, code, out)
	bin, err := filepath.Abs(droverBin) // the task runs in its own directory
	require.NoError(t, err)
	jobFile := writeJobFile(t, fmt.Sprintf(identityJobHCL, s1.httpAddr(), bin, bin))
	code, out = droverAs(t, s1.httpAddr(), root.SecretID, "job", "run", "-detach", jobFile)
	require.Equal(t, 0, code, out)

	alloc := waitBatchAlloc(t, mgmt, "idjob", "a", 30*time.Second)
	require.Equal(t, "complete", alloc.ClientStatus)

	logsPath := "/v1/client/fs/logs/" + alloc.ID + "?task=t&type=stdout&plain=true"
	status, logs := getWithToken(t, s1.httpAddr()+logsPath, root.SecretID)
	require.Equal(t, http.StatusOK, status, logs)
	require.Contains(t, logs, "OWN_EXIT=0", logs)
	require.Contains(t, logs, "idjob", logs)
	require.Regexp(t, `OTHER_EXIT=[1-9]`, logs)
	require.Contains(t, logs, "403", logs)
	require.Contains(t, logs, "Permission denied", logs)

	envTok := regexp.MustCompile(`(?m)^ENV_TOKEN=(\S*)$`).FindStringSubmatch(logs)
	fileTok := regexp.MustCompile(`(?m)^FILE_TOKEN=(\S*)$`).FindStringSubmatch(logs)
	require.Len(t, envTok, 2, logs)
	require.Len(t, fileTok, 2, logs)
	require.NotEmpty(t, envTok[1])
	require.Equal(t, envTok[1], fileTok[1], "the token file holds the same JWT")

	// The JWT verifies against the public JWKS, with Nomad's claims.
	var claims struct {
		Namespace string `json:"nomad_namespace"`
		JobID     string `json:"nomad_job_id"`
		AllocID   string `json:"nomad_allocation_id"`
		Task      string `json:"nomad_task"`
		jwt.Claims
	}
	verifyJWKS(t, s1.httpAddr(), envTok[1], &claims)
	require.Equal(t, "a", claims.Namespace)
	require.Equal(t, "idjob", claims.JobID)
	require.Equal(t, alloc.ID, claims.AllocID)
	require.Equal(t, "t", claims.Task)
	require.True(t, claims.Audience.Contains("nomadproject.io"))

	// The client agent's own port: no token, no logs.
	status, body := getWithToken(t, fmt.Sprintf("http://%s%s", cl.httpHostPort(), logsPath), "")
	require.Equal(t, http.StatusForbidden, status, body)
	require.Contains(t, body, "Permission denied")
	status, body = getWithToken(t, fmt.Sprintf("http://%s%s", cl.httpHostPort(), logsPath), root.SecretID)
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, "OWN_EXIT=0")
	t.Logf("workload identity story took %s", time.Since(start).Round(time.Millisecond))
}

// getWithToken GETs url with X-Nomad-Token (when set) and returns the
// status and body.
func getWithToken(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("X-Nomad-Token", token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, strings.TrimSpace(string(raw))
}

// aclServerAndClient starts one server with ACLs on, bootstraps them, and
// one client agent (ACLs on too) that is ready; mgmt holds the root token.
func aclServerAndClient(t *testing.T, clientName string) (s1, cl *agentProc, root *api.ACLToken, mgmt *api.Client) {
	t.Helper()
	s1 = newServer(t, serverSpec{name: "s1", bootstrapExpect: 1, top: "acl {\n  enabled = true\n}"})
	waitLeader(t, s1)
	root, _, err := s1.client(t).ACLTokens().Bootstrap(nil)
	require.NoError(t, err)
	mgmt = tokenClient(t, s1.httpAddr(), root.SecretID)
	cl = newClientAgentWith(t, clientName, "", "acl {\n  enabled = true\n}", s1.httpHostPort())
	waitReadyNodes(t, mgmt, 1)
	return s1, cl, root, mgmt
}

// waitBatchAlloc waits for the single allocation of batch job jobID (in
// namespace, "" for the default) to be complete or failed.
func waitBatchAlloc(t *testing.T, c *api.Client, jobID, namespace string, timeout time.Duration) *api.AllocationListStub {
	t.Helper()
	var alloc *api.AllocationListStub
	require.Eventually(t, func() bool {
		allocs, _, err := c.Jobs().Allocations(jobID, false, &api.QueryOptions{Namespace: namespace})
		if err != nil || len(allocs) != 1 {
			return false
		}
		alloc = allocs[0]
		return alloc.ClientStatus == "complete" || alloc.ClientStatus == "failed"
	}, timeout, 100*time.Millisecond)
	return alloc
}

// verifyJWKS checks token's signature against the server's
// /.well-known/jwks.json and decodes its claims into claims.
func verifyJWKS(t *testing.T, addr, token string, claims any) {
	t.Helper()
	_, jwks := getWithToken(t, addr+"/.well-known/jwks.json", "")
	var set jose.JSONWebKeySet
	require.NoError(t, json.Unmarshal([]byte(jwks), &set))
	parsed, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
	require.NoError(t, err)
	keys := set.Key(parsed.Headers[0].KeyID)
	require.Len(t, keys, 1)
	require.NoError(t, parsed.Claims(keys[0].Key, claims))
}
