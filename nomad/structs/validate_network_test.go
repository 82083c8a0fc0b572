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
