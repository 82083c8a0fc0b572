package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRawExecOnlyEnabledInDev: raw_exec runs anything on the host as the
// agent's user, so only -dev enables it; any other agent needs the
// operator's plugin "raw_exec" { config { enabled = true } }.
func TestRawExecOnlyEnabledInDev(t *testing.T) {
	require.NotContains(t, DefaultConfig().Plugins, "raw_exec")
	require.Equal(t, true, DevConfig().Plugins["raw_exec"].Config["enabled"])

	c, err := Parse("client.hcl", []byte("client {\n  enabled = true\n}\n"))
	require.NoError(t, err)
	require.NotContains(t, DefaultConfig().Merge(c).Plugins, "raw_exec")
}
