package config

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestClientIntroductionConfig(t *testing.T) {
	c, err := Parse("agent.hcl", []byte(`
server {
  enabled = true
  client_introduction {
    enforcement              = "strict"
    default_identity_ttl     = "10m"
    max_request_identity_ttl = "1h"
  }
}
client {
  enabled     = true
  intro_token = "file-token"
}`))
	require.NoError(t, err)
	require.Equal(t, ClientIntroductionConfig{Enforcement: "strict", DefaultIdentityTTL: 10 * time.Minute, MaxRequestIdentityTTL: time.Hour},
		c.Server.ClientIntroduction)
	require.Equal(t, "file-token", c.Client.IntroToken)
	require.NotContains(t, c.Ignored, "server.client_introduction", "acted on, not ignored")
	require.NotContains(t, c.Ignored, "client.intro_token")

	merged := DefaultConfig().Merge(c)
	require.Equal(t, c.Server.ClientIntroduction, merged.Server.ClientIntroduction)
	require.Equal(t, "file-token", merged.Client.IntroToken)

	_, err = Parse("agent.hcl", []byte(`
server {
  client_introduction {
    enforcment = "strict"
  }
}`))
	require.ErrorContains(t, err, `enforcment`, "a typo in the block is an error")
}

func TestClientIntroductionValidate(t *testing.T) {
	for _, c := range []struct {
		edit func(*ClientIntroductionConfig)
		want string
	}{
		{func(ci *ClientIntroductionConfig) { ci.Enforcement = "strikt" }, `server.client_introduction.enforcement: unknown value "strikt"; use one of none, warn, strict`},
		{func(ci *ClientIntroductionConfig) { ci.DefaultIdentityTTL = -time.Second }, "server.client_introduction.default_identity_ttl: must not be negative"},
		{func(ci *ClientIntroductionConfig) { ci.MaxRequestIdentityTTL = -time.Second }, "server.client_introduction.max_request_identity_ttl: must not be negative"},
		{func(ci *ClientIntroductionConfig) { ci.DefaultIdentityTTL = time.Hour }, "server.client_introduction.default_identity_ttl: 1h0m0s exceeds max_request_identity_ttl (30m0s)"},
	} {
		cfg := DevConfig()
		c.edit(&cfg.Server.ClientIntroduction)
		require.ErrorContains(t, cfg.Validate(), c.want)
	}
	for _, e := range IntroductionEnforcements {
		cfg := DevConfig()
		cfg.Server.ClientIntroduction.Enforcement = e
		require.NoError(t, cfg.Validate(), e)
	}
}

// TestIntroTokenSources: the file's intro_token, then
// NOMAD_CLIENT_INTRO_TOKEN, then -client-intro-token.
func TestIntroTokenSources(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "client.hcl", `client { intro_token = "from-file" }`)
	load := func(args ...string) string {
		t.Helper()
		var stderr bytes.Buffer
		c, err := LoadFromArgs(append([]string{"-dev"}, args...), &stderr)
		require.NoError(t, err, stderr.String())
		return c.Client.IntroToken
	}
	t.Setenv(IntroTokenEnv, "")
	require.Equal(t, "from-file", load("-config", file))
	t.Setenv(IntroTokenEnv, "from-env")
	require.Equal(t, "from-env", load("-config", file))
	require.Equal(t, "from-flag", load("-config", file, "-client-intro-token", "from-flag"))
}
