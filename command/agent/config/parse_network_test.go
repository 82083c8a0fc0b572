package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseClientBridgeNetwork(t *testing.T) {
	c, err := Parse("net.hcl", []byte(`client {
  enabled                     = true
  cni_path                    = "/opt/cni/bin:/usr/lib/cni"
  cni_config_dir              = "/etc/drover/cni"
  bridge_network_name         = "br-apps"
  bridge_network_subnet       = "10.9.0.0/24"
  bridge_network_hairpin_mode = true
}
`))
	require.NoError(t, err)
	require.Equal(t, "/opt/cni/bin:/usr/lib/cni", c.Client.CNIPath)
	require.Equal(t, "/etc/drover/cni", c.Client.CNIConfigDir)
	require.Equal(t, "br-apps", c.Client.BridgeNetworkName)
	require.Equal(t, "10.9.0.0/24", c.Client.BridgeNetworkSubnet)
	require.True(t, c.Client.BridgeNetworkHairpinMode)
	require.Empty(t, c.Ignored, "the keys are acted on, not ignored")

	merged := DevConfig().Merge(c)
	require.Equal(t, "br-apps", merged.Client.BridgeNetworkName)
	require.Equal(t, "10.9.0.0/24", merged.Client.BridgeNetworkSubnet)
	require.Equal(t, "/opt/cni/bin:/usr/lib/cni", merged.Client.CNIPath)
	require.True(t, merged.Client.BridgeNetworkHairpinMode)
}
