package structs

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestValidate_NetworkModesAccepted: the group network settings Drover
// carries out validate.
func TestValidate_NetworkModesAccepted(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(n *NetworkResource, task *Task)
	}{
		{"host", func(n *NetworkResource, _ *Task) { n.Mode = "host" }},
		{"bridge", func(n *NetworkResource, _ *Task) { n.Mode = "bridge" }},
		{"bridge with dns and hostname, docker task", func(n *NetworkResource, task *Task) {
			n.Mode, n.Hostname, n.DNS = "bridge", "web", &DNSConfig{Servers: []string{"10.0.0.2"}}
			task.Driver = "docker"
		}},
		{"bridge with dns, exec task", func(n *NetworkResource, task *Task) {
			n.Mode, n.DNS = "bridge", &DNSConfig{Options: []string{"ndots:2"}}
			task.Driver, task.Config = "exec", map[string]any{"command": "/bin/true"}
		}},
		{"cni network with args", func(n *NetworkResource, _ *Task) {
			n.Mode, n.CNI = "cni/mynet", &CNIConfig{Args: map[string]string{"IgnoreUnknown": "1", "foo": "bar"}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := testJob()
			tc.mutate(j.TaskGroups[0].Networks[0], j.TaskGroups[0].Tasks[0])
			require.NoError(t, j.Validate())
		})
	}
}

// TestValidate_HostNetworks: a port naming a host network validates (the
// scheduler places it on nodes with that network); an interpolated
// host_network is refused naming the group, the port and why.
func TestValidate_HostNetworks(t *testing.T) {
	const why = "interpolation in host_network is not supported by Drover yet: name the host network"
	cases := []struct {
		name   string
		mutate func(j *Job)
		want   []string // problems; nil: the job validates
	}{
		{"unset", func(j *Job) {}, nil},
		{"default", func(j *Job) {
			j.TaskGroups[0].Networks[0].ReservedPorts[0].HostNetwork = "default"
			j.TaskGroups[0].Networks[0].DynamicPorts[0].HostNetwork = "default"
		}, nil},
		{"static group port", func(j *Job) {
			j.TaskGroups[0].Networks[0].ReservedPorts[0].HostNetwork = "private"
		}, nil},
		{"dynamic group port in bridge mode", func(j *Job) {
			j.TaskGroups[0].Networks[0].Mode = "bridge"
			j.TaskGroups[0].Networks[0].DynamicPorts[0].HostNetwork = "public"
		}, nil},
		{"interpolated group port", func(j *Job) {
			j.TaskGroups[0].Networks[0].ReservedPorts[0].HostNetwork = "${meta.net}"
		}, []string{`Task group "web" validation failed: network: port "admin": host_network = "${meta.net}": ` + why}},
		{"interpolated task port", func(j *Job) {
			j.TaskGroups[0].Tasks[0].Resources.Networks = []*NetworkResource{{
				ReservedPorts: []Port{{Label: "legacy", Value: 7000, HostNetwork: "${meta.net}"}},
			}}
		}, []string{`Task group "web" validation failed: task "server": resources: network: port "legacy": host_network = "${meta.net}": ` + why}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := testJob()
			tc.mutate(j)
			err := j.Validate()
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			require.Equal(t, tc.want, ve.Problems)
		})
	}
}
