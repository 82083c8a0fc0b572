package command

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCLI_ACLAuthMethodsAndBindingRules(t *testing.T) {
	startACLAgent(t)
	code, out, errOut := runCmd("acl", "bootstrap")
	require.Equal(t, 0, code, errOut)
	t.Setenv("NOMAD_TOKEN", secretRE.FindStringSubmatch(out)[1])

	cfg := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(cfg, []byte(`{"OIDCDiscoveryURL":"https://idp.example.com","OIDCClientID":"cid",
		"BoundAudiences":["cid"],"ClaimMappings":{"email":"email"}}`), 0o600))
	code, out, errOut = runCmd("acl", "auth-method", "create", "-name", "corp", "-type", "oidc",
		"-max-token-ttl", "1h", "-token-locality", "local", "-default", "-config", "@"+cfg)
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `Name\s+= corp`, out)
	require.Regexp(t, `Type\s+= OIDC`, out)
	require.Regexp(t, `Max Token TTL\s+= 1h0m0s`, out)
	require.Regexp(t, `Claim mappings\s+= \{email: email\}`, out)

	// Bad input reaches the user with the server's reason.
	code, _, errOut = runCmd("acl", "auth-method", "create", "-name", "bad", "-type", "LDAP",
		"-max-token-ttl", "1h", "-token-locality", "local", "-config", "@"+cfg)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "Type must be OIDC or JWT")

	// Update changes only the flags given.
	code, out, errOut = runCmd("acl", "auth-method", "update", "-token-locality", "global", "corp")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `Locality\s+= global`, out)
	require.Regexp(t, `OIDC Discovery URL\s+= https://idp.example.com`, out)

	code, out, errOut = runCmd("acl", "auth-method", "list")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `corp\s+OIDC\s+true`, out)

	code, out, errOut = runCmd("acl", "binding-rule", "create", "-auth-method", "corp",
		"-selector", "eng in list.groups", "-bind-type", "role", "-bind-name", "eng", "-description", "engineers")
	require.Equal(t, 0, code, errOut)
	id := regexp.MustCompile(`ID\s+= (\S+)`).FindStringSubmatch(out)[1]
	code, out, errOut = runCmd("acl", "binding-rule", "update", "-bind-name", "eng-admin", id)
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `Bind Name\s+= eng-admin`, out)
	require.Regexp(t, `Selector\s+= "eng in list.groups"`, out)
	code, out, errOut = runCmd("acl", "binding-rule", "list")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, id)
	code, out, errOut = runCmd("acl", "binding-rule", "info", id)
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `Description\s+= engineers`, out)

	code, _, errOut = runCmd("acl", "binding-rule", "delete", id)
	require.Equal(t, 0, code, errOut)
	code, out, _ = runCmd("acl", "binding-rule", "list")
	require.Equal(t, 0, code)
	require.Contains(t, out, "No ACL binding rules found")
	code, _, errOut = runCmd("acl", "auth-method", "delete", "corp")
	require.Equal(t, 0, code, errOut)
	code, _, errOut = runCmd("acl", "auth-method", "info", "corp")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "404")
}
