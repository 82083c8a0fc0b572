package command

import (
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

func TestParseHostVolumeSpec(t *testing.T) {
	v, err := parseHostVolumeSpec("vol.hcl", []byte(`
type         = "host"
name         = "scratch"
plugin_id    = "mkdir"
node_pool    = "default"
capacity_min = "1GiB"
capacity_max = "2G"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
constraint {
  attribute = "${attr.kernel.name}"
  value     = "linux"
}
parameters {
  mode = "0750"
  uid  = 1000
}
`))
	require.NoError(t, err)
	require.Equal(t, &api.HostVolume{
		Name: "scratch", PluginID: "mkdir", NodePool: "default",
		RequestedCapacityMinBytes: 1 << 30, RequestedCapacityMaxBytes: 2e9,
		RequestedCapabilities: []*api.HostVolumeCapability{{AccessMode: "single-node-writer", AttachmentMode: "file-system"}},
		Constraints:           []*api.Constraint{{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux"}},
		Parameters:            map[string]string{"mode": "0750", "uid": "1000"},
	}, v)

	_, err = parseHostVolumeSpec("vol.hcl", []byte(`type = "csi"
name = "ebs"`))
	require.ErrorContains(t, err, "CSI volumes are not supported by Drover")
	_, err = parseHostVolumeSpec("vol.hcl", []byte(`name = "x"`))
	require.ErrorContains(t, err, `The argument "type" is required`)
	_, err = parseHostVolumeSpec("vol.hcl", []byte("type = \"host\"\ncapacity_min = \"lots\""))
	require.ErrorContains(t, err, `capacity_min: invalid size "lots"`)
	_, err = parseHostVolumeSpec("vol.hcl", []byte("type = \"host\"\nsize = 3"))
	require.ErrorContains(t, err, `Unsupported argument`)
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"1024": 1024, "1KiB": 1024, "1kb": 1000, "1.5GiB": 3 << 29, "10MB": 1e7, "5B": 5} {
		got, err := parseBytes(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := parseBytes("-1")
	require.Error(t, err)
}
