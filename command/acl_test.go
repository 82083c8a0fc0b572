package command

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/command/agent"
	"github.com/drover-project/drover/command/agent/config"
)

// startACLAgent starts an in-process server agent with ACLs on and points
// the CLI at it through NOMAD_ADDR.
func startACLAgent(t *testing.T) {
	t.Helper()
	cfg := config.DevConfig()
	cfg.Name = fmt.Sprintf("cli-acl-%d", time.Now().UnixNano())
	cfg.Ports.HTTP, cfg.Ports.RPC = 0, 0
	cfg.Client.Enabled = false
	cfg.DataDir = t.TempDir()
	cfg.ACL.Enabled = true
	a, err := agent.NewAgent(cfg, hclog.NewNullLogger())
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Shutdown() })
	require.Eventually(t, func() bool { return a.Server().IsLeader() }, 10*time.Second, 20*time.Millisecond)
	t.Setenv("NOMAD_ADDR", "http://"+a.HTTPAddr())
	t.Setenv("NOMAD_TOKEN", "")
	t.Setenv("NOMAD_NAMESPACE", "")
}

var secretRE = regexp.MustCompile(`Secret ID\s+= (\S+)`)
var accessorRE = regexp.MustCompile(`Accessor ID\s+= (\S+)`)

func TestCLI_ACLAndNamespaces(t *testing.T) {
	startACLAgent(t)

	code, out, errOut := runCmd("acl", "bootstrap")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Type         = management")
	secret := secretRE.FindStringSubmatch(out)[1]
	code, _, errOut = runCmd("acl", "bootstrap")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "ACL bootstrap already done (reset index: ")

	// Without a token nothing is allowed.
	code, _, errOut = runCmd("namespace", "apply", "a")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "403 (Permission denied)")

	t.Setenv("NOMAD_TOKEN", secret)
	code, out, errOut = runCmd("namespace", "apply", "-description", "team a", "a")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `Successfully applied namespace "a"!`)
	code, out, _ = runCmd("namespace", "list")
	require.Equal(t, 0, code)
	require.Regexp(t, `a\s+team a`, out)
	require.Contains(t, out, "default")
	code, out, _ = runCmd("namespace", "status", "a")
	require.Equal(t, 0, code)
	require.Contains(t, out, "Description  = team a")

	rules := filepath.Join(t.TempDir(), "ro.hcl")
	require.NoError(t, os.WriteFile(rules, []byte(`namespace "a" { policy = "read" }`), 0o600))
	code, out, errOut = runCmd("acl", "policy", "apply", "-description", "read a", "ro", rules)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `Successfully wrote "ro" ACL policy!`)
	bad := filepath.Join(t.TempDir(), "bad.hcl")
	require.NoError(t, os.WriteFile(bad, []byte(`namespace "a" { policy = "root" }`), 0o600))
	code, _, errOut = runCmd("acl", "policy", "apply", "bad", bad)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `invalid policy "root"`)
	code, out, _ = runCmd("acl", "policy", "list")
	require.Equal(t, 0, code)
	require.Regexp(t, `ro\s+read a`, out)
	require.NotContains(t, out, "bad")
	code, out, _ = runCmd("acl", "policy", "info", "ro")
	require.Equal(t, 0, code)
	require.Contains(t, out, `policy = "read"`)

	code, out, errOut = runCmd("acl", "role", "create", "-name", "readers", "-policy", "ro")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Policies     = ro")
	code, out, _ = runCmd("acl", "role", "list")
	require.Equal(t, 0, code)
	require.Contains(t, out, "readers")

	code, out, errOut = runCmd("acl", "token", "create", "-name", "reader", "-role-name", "readers", "-ttl", "1h")
	require.Equal(t, 0, code, errOut)
	roSecret := secretRE.FindStringSubmatch(out)[1]
	roAccessor := accessorRE.FindStringSubmatch(out)[1]
	require.NotContains(t, out, "Expiry Time  = <none>")
	code, out, _ = runCmd("acl", "token", "list")
	require.Equal(t, 0, code)
	require.Contains(t, out, roAccessor)
	code, out, _ = runCmd("acl", "token", "update", "-name", "renamed", roAccessor)
	require.Equal(t, 0, code)
	require.Contains(t, out, "Name         = renamed")

	// The reader token reads namespace a only.
	t.Setenv("NOMAD_TOKEN", roSecret)
	code, out, _ = runCmd("acl", "token", "self")
	require.Equal(t, 0, code)
	require.Contains(t, out, roAccessor)
	code, _, errOut = runCmd("job", "status", "-namespace", "a")
	require.Equal(t, 0, code, errOut)
	t.Setenv("NOMAD_NAMESPACE", "default")
	code, _, errOut = runCmd("job", "status")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "Permission denied")
	code, out, _ = runCmd("namespace", "list")
	require.Equal(t, 0, code)
	require.NotContains(t, out, "default")

	t.Setenv("NOMAD_TOKEN", secret)
	code, out, _ = runCmd("acl", "token", "delete", roAccessor)
	require.Equal(t, 0, code)
	require.Contains(t, out, "successfully deleted")
	code, _, _ = runCmd("acl", "policy", "delete", "ro")
	require.Equal(t, 0, code)
	code, out, _ = runCmd("namespace", "delete", "a")
	require.Equal(t, 0, code)
	require.Contains(t, out, `Successfully deleted namespace "a"!`)
}
