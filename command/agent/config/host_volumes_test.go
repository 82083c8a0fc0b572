package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse_HostVolumes(t *testing.T) {
	c, err := Parse("agent.hcl", []byte(`
client {
  enabled = true
  host_volumes_dir = "/srv/dynamic"
  host_volume "data" { path = "/srv/data" }
  host_volume "certs" {
    path      = "/etc/ssl/certs"
    read_only = true
  }
}
`))
	require.NoError(t, err)
	require.Equal(t, map[string]HostVolume{
		"data":  {Path: "/srv/data"},
		"certs": {Path: "/etc/ssl/certs", ReadOnly: true},
	}, c.Client.HostVolumes)
	require.Equal(t, "/srv/dynamic", c.Client.HostVolumesDir)
	require.Empty(t, c.Ignored)

	_, err = Parse("agent.hcl", []byte(`client {
  host_volume "a" { path = "/a" }
  host_volume "a" { path = "/b" }
}`))
	require.ErrorContains(t, err, `Duplicate host_volume "a" block`)
	_, err = Parse("agent.hcl", []byte("client {\n  host_volume \"a\" { read_only = true }\n}"))
	require.ErrorContains(t, err, `"path" is required`)
	_, err = Parse("agent.hcl", []byte("client {\n  host_volume \"a\" {\n    path = \"/a\"\n    mode = \"x\"\n  }\n}"))
	require.ErrorContains(t, err, `An argument named "mode" is not expected here`)
}

func TestMerge_HostVolumes(t *testing.T) {
	a := DefaultConfig()
	a.Client.HostVolumes = map[string]HostVolume{"data": {Path: "/a"}, "logs": {Path: "/logs"}}
	b := DefaultConfig()
	b.Client.HostVolumes = map[string]HostVolume{"data": {Path: "/b", ReadOnly: true}}
	m := a.Merge(b)
	require.Equal(t, map[string]HostVolume{"data": {Path: "/b", ReadOnly: true}, "logs": {Path: "/logs"}}, m.Client.HostVolumes)
	require.Equal(t, map[string]HostVolume{"data": {Path: "/a"}, "logs": {Path: "/logs"}}, a.Client.HostVolumes, "merge leaves its inputs alone")
}

func TestValidate_HostVolumes(t *testing.T) {
	c := validServer()
	c.Client.HostVolumes = map[string]HostVolume{"ok": {Path: "/srv"}, "rel": {Path: "srv"}, "empty": {}}
	err := c.Validate()
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Equal(t, []string{
		`client.host_volume "empty": path is required`,
		`client.host_volume "rel": path "srv" must be absolute`,
	}, lines)
}
