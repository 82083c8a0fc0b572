package docker

import (
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/go-connections/nat"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers"
)

func TestPauseSpec(t *testing.T) {
	cc, hc := pauseSpec(&drivers.NetworkCreateRequest{
		AllocID: "a1", Hostname: "web-0",
		DNS: &drivers.DNSConfig{Servers: []string{"10.0.0.2"}, Searches: []string{"svc"}, Options: []string{"ndots:2"}},
	}, "drover-pause:abc")
	require.Equal(t, "drover-pause:abc", cc.Image)
	require.Equal(t, "web-0", cc.Hostname)
	require.Equal(t, map[string]string{LabelAllocID: "a1", LabelPause: "true"}, cc.Labels)
	require.Equal(t, container.NetworkMode("none"), hc.NetworkMode, "the namespace is Drover's to set up, not Docker's")
	require.Equal(t, []string{"10.0.0.2"}, hc.DNS)
	require.Equal(t, []string{"svc"}, hc.DNSSearch)
	require.Equal(t, []string{"ndots:2"}, hc.DNSOptions)

	_, hc = pauseSpec(&drivers.NetworkCreateRequest{AllocID: "a1"}, "img")
	require.Nil(t, hc.DNS, "no dns block: Docker's default resolv.conf")
}

func TestJoinGroupNetwork(t *testing.T) {
	iso := &drivers.NetworkIsolation{Path: "/d/netns/a1", Labels: map[string]string{PauseContainerKey: "pause123"}}
	cases := []struct {
		name    string
		net     *drivers.NetworkIsolation
		mode    string
		want    container.NetworkMode
		errText string
	}{
		{name: "host network: untouched", mode: "", want: "bridge-as-set"},
		{name: "bridge group: the pause container's namespace", net: iso, want: "container:pause123"},
		{name: "own network_mode refused", net: iso, mode: "host", errText: "network_mode"},
		{name: "no pause container", net: &drivers.NetworkIsolation{Path: "/x"}, errText: "no pause container"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cc := &container.Config{Hostname: "h", ExposedPorts: nat.PortSet{"80/tcp": {}}}
			hc := &container.HostConfig{NetworkMode: "bridge-as-set", DNS: []string{"1.1.1.1"}, PortBindings: nat.PortMap{"80/tcp": nil}}
			err := joinGroupNetwork(&drivers.TaskConfig{Network: tc.net}, &taskConfig{NetworkMode: tc.mode}, cc, hc)
			if tc.errText != "" {
				require.ErrorContains(t, err, tc.errText)
				require.False(t, drivers.IsRecoverable(err))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, hc.NetworkMode)
			if tc.net != nil {
				require.Empty(t, cc.Hostname, "the pause container's")
				require.Nil(t, hc.DNS, "the pause container's")
				require.Nil(t, hc.PortBindings, "mapped by CNI, not published")
				require.Nil(t, cc.ExposedPorts)
			}
		})
	}
}

func TestCheckStatic(t *testing.T) {
	require.ErrorContains(t, checkStatic("/bin/sh"), "dynamically linked")
	require.Error(t, checkStatic("/etc/hostname"), "not an executable")
}
