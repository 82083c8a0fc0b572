package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/require"
)

// identityRenewJobHCL is a batch job whose raw_exec task reads its token
// file, waits for the file to change (the client renews the identity at
// half its 6s ttl), notes when it did, and reads its own job with the new
// token.
const identityRenewJobHCL = `
job "idrenew" {
  type = "batch"
  group "g" {
    task "t" {
      driver = "raw_exec"
      identity {
        file = true
        ttl  = "6s"
      }
      env {
        NOMAD_ADDR = "%s"
      }
      config {
        command = "/bin/sh"
        args = ["-c", <<EOT
f="$NOMAD_SECRETS_DIR/nomad_token"
first=$(cat "$f")
echo "FIRST=$first"
i=0
while [ "$(cat "$f")" = "$first" ] && [ $i -lt 300 ]; do sleep 0.05; i=$((i+1)); done
echo "CHANGED_AT=$(date +%%s)"
second=$(cat "$f")
echo "SECOND=$second"
NOMAD_TOKEN="$second" %s job status idrenew >/dev/null 2>&1; echo "OWN_EXIT=$?"
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

// TestWorkloadIdentityRenewal: an identity with ttl = "6s" is renewed by
// the client before it expires: the token file changes while the first
// token is still valid, and the new token verifies against the JWKS and
// authenticates the task's own job read.
func TestWorkloadIdentityRenewal(t *testing.T) {
	start := time.Now()
	s1, _, root, mgmt := aclServerAndClient(t, "client-1")
	bin, err := filepath.Abs(droverBin)
	require.NoError(t, err)
	code, out := droverAs(t, s1.httpAddr(), root.SecretID, "job", "run", "-detach",
		writeJobFile(t, fmt.Sprintf(identityRenewJobHCL, s1.httpAddr(), bin)))
	require.Equal(t, 0, code, out)

	alloc := waitBatchAlloc(t, mgmt, "idrenew", "", 40*time.Second)
	status, logs := getWithToken(t, s1.httpAddr()+"/v1/client/fs/logs/"+alloc.ID+"?task=t&type=stdout&plain=true", root.SecretID)
	require.Equal(t, http.StatusOK, status, logs)
	require.Equal(t, "complete", alloc.ClientStatus, logs)

	field := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + `=(\S*)$`).FindStringSubmatch(logs)
		require.Len(t, m, 2, logs)
		return m[1]
	}
	first, second := field("FIRST"), field("SECOND")
	require.NotEmpty(t, first)
	require.NotEqual(t, first, second, "the token file changed: %s", logs)
	changedAt, err := strconv.ParseInt(field("CHANGED_AT"), 10, 64)
	require.NoError(t, err)
	require.Equal(t, "0", field("OWN_EXIT"), "the renewed token reads the task's own job")

	claimsOf := func(tok string) jwt.Claims {
		var c jwt.Claims
		verifyJWKS(t, s1.httpAddr(), tok, &c)
		require.NotNil(t, c.Expiry)
		return c
	}
	c1, c2 := claimsOf(first), claimsOf(second)
	require.Equal(t, 6*time.Second, c1.Expiry.Time().Sub(c1.IssuedAt.Time()), "exp is iat + ttl")
	require.Less(t, changedAt, c1.Expiry.Time().Unix(), "renewed before the first token expired")
	require.True(t, c2.Expiry.Time().After(c1.Expiry.Time()))
	t.Logf("identity renewal story took %s", time.Since(start).Round(time.Millisecond))
}
