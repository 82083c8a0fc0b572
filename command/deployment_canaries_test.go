package command

import (
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// TestFormatCanaries: only the deployment's placed canaries are listed, by
// group then node name, with their datacenter and health.
func TestFormatCanaries(t *testing.T) {
	yes := true
	d := &api.Deployment{ID: "d1", TaskGroups: map[string]*api.DeploymentState{
		"web": {PlacedCanaries: []string{"c-b", "c-a"}},
		"api": {PlacedCanaries: []string{"c-z"}},
	}}
	allocs := []*api.AllocationListStub{
		{ID: "c-b", NodeID: "n2", NodeName: "node-b", TaskGroup: "web", ClientStatus: "running",
			DeploymentStatus: &api.AllocDeploymentStatus{Healthy: &yes, Canary: true}},
		{ID: "plain", NodeID: "n3", NodeName: "node-c", TaskGroup: "web", ClientStatus: "running"},
		{ID: "c-a", NodeID: "n1", NodeName: "node-a", TaskGroup: "web", ClientStatus: "pending"},
		{ID: "c-z", NodeID: "n9", NodeName: "node-z", TaskGroup: "api", ClientStatus: "running"},
	}
	require.True(t, hasPlacedCanaries(d))
	require.False(t, hasPlacedCanaries(&api.Deployment{TaskGroups: map[string]*api.DeploymentState{"web": {}}}))
	out := formatCanaries(d, allocs, map[string]string{"n1": "dc1", "n2": "dc2"}, true)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4, out)
	require.Equal(t, []string{"Task", "Group", "Alloc", "ID", "Node", "ID", "Node", "Name", "Datacenter", "Status", "Healthy"}, strings.Fields(lines[0]))
	require.Equal(t, []string{"api", "c-z", "n9", "node-z", "-", "running", "-"}, strings.Fields(lines[1]))
	require.Equal(t, []string{"web", "c-a", "n1", "node-a", "dc1", "pending", "-"}, strings.Fields(lines[2]))
	require.Equal(t, []string{"web", "c-b", "n2", "node-b", "dc2", "running", "true"}, strings.Fields(lines[3]))
}
