package command

import (
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

func TestFormatHostVolumes(t *testing.T) {
	require.Equal(t, "<none>", formatHostVolumes(nil))
	out := formatHostVolumes(map[string]*api.HostVolumeInfo{
		"logs":  {Path: "/var/log/app"},
		"certs": {Path: "/etc/ssl", ReadOnly: true},
	})
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	require.Len(t, lines, 3, out)
	require.Equal(t, []string{"Name", "ReadOnly", "Source"}, strings.Fields(lines[0]))
	require.Equal(t, []string{"certs", "true", "/etc/ssl"}, strings.Fields(lines[1]))
	require.Equal(t, []string{"logs", "false", "/var/log/app"}, strings.Fields(lines[2]))
}

func TestFormatHostNetworks(t *testing.T) {
	require.Equal(t, "<none>", formatHostNetworks(nil))
	out := formatHostNetworks(map[string]*api.HostNetworkInfo{
		"public":  {Name: "public", CIDR: "203.0.113.0/24", ReservedPorts: "22,80"},
		"private": {Name: "private", Interface: "eth1"},
	})
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	require.Len(t, lines, 3, out)
	require.Equal(t, []string{"Name", "CIDR", "Interface", "ReservedPorts"}, strings.Fields(lines[0]))
	require.Equal(t, []string{"private", "<none>", "eth1", "<none>"}, strings.Fields(lines[1]))
	require.Equal(t, []string{"public", "203.0.113.0/24", "<none>", "22,80"}, strings.Fields(lines[2]))
}
