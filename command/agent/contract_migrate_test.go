package agent

import (
	"net/url"
	"testing"

	"github.com/google/uuid"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/wire"
)

// TestContractNodeAllocs_MigrationPeer: the node of a replacement whose
// group's ephemeral disk migrates receives, with the allocation, the HTTP
// address of the node that ran the previous allocation and a migrate token
// keyed by that node's secret; no other allocation carries either.
func TestContractNodeAllocs_MigrationPeer(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	type node struct{ id, secret, addr string }
	nodes := map[string]node{}
	for i, name := range []string{"node-1", "node-2"} {
		n := node{id: uuid.NewString(), secret: uuid.NewString(), addr: []string{"127.0.0.1:14646", "127.0.0.1:24646"}[i]}
		an := &api.Node{
			ID: n.id, Name: name, Datacenter: "dc1", NodePool: "default", Status: "ready", HTTPAddr: n.addr,
			SchedulingEligibility: "eligible",
			Attributes:            map[string]string{"kernel.name": "linux", "os.name": "debian"},
			NodeResources: &api.NodeResources{Cpu: api.NodeCpuResources{CpuShares: 4000, TotalCpuCores: 4},
				Memory: api.NodeMemoryResources{MemoryMB: 8192}, Disk: api.NodeDiskResources{DiskMB: 100000}},
			ReservedResources: &api.NodeReservedResources{},
			Drivers:           map[string]*api.DriverInfo{"raw_exec": {Detected: true, Healthy: true}},
		}
		var out wire.NodeRegisterResponse
		_, err := c.Raw().Write(wire.RouteNodeRegister, &wire.NodeRegisterRequest{Node: an, SecretID: n.secret}, &out, nil)
		require.NoError(t, err)
		nodes[n.id] = n
	}
	nodeAllocs := func(n node) []*wire.NodeAlloc {
		var out []*wire.NodeAlloc
		_, err := ta.clientWith(t, n.secret).Raw().Query("/v1/internal/node/"+url.PathEscape(n.id)+"/allocs", &out, nil)
		require.NoError(t, err)
		return out
	}
	register := func(job *api.Job) {
		resp, _, err := c.Jobs().Register(job, nil)
		require.NoError(t, err)
		require.Equal(t, "complete", waitEvalComplete(t, c, resp.EvalID).Status)
	}
	job := func(version string, disk *api.EphemeralDisk) *api.Job {
		j := testJob("cache")
		j.Type = new("service")
		j.TaskGroups[0].Update = nil
		j.TaskGroups[0].EphemeralDisk = disk
		j.TaskGroups[0].Tasks[0].Env = map[string]string{"V": version}
		return j
	}

	for _, tc := range []struct {
		name     string
		disk     *api.EphemeralDisk
		wantPeer bool
	}{
		{"migrate", &api.EphemeralDisk{Migrate: new(true)}, true},
		{"sticky only", &api.EphemeralDisk{Sticky: new(true)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			register(job("1", tc.disk))
			allocs, _, err := c.Jobs().Allocations("cache", false, nil)
			require.NoError(t, err)
			var prev *api.AllocationListStub
			for _, a := range allocs {
				if a.DesiredStatus == "run" {
					prev = a
				}
			}
			require.NotNil(t, prev)
			from := nodes[prev.NodeID]
			_, err = c.Nodes().ToggleEligibility(from.id, false, nil)
			require.NoError(t, err)
			t.Cleanup(func() { _, _ = c.Nodes().ToggleEligibility(from.id, true, nil) })
			register(job("2", tc.disk))

			var to node
			for id, n := range nodes {
				if id != from.id {
					to = n
				}
			}
			var repl *wire.NodeAlloc
			for _, a := range nodeAllocs(to) {
				if a.PreviousAllocation == prev.ID {
					repl = a
				}
			}
			require.NotNil(t, repl, "the replacement runs on the other node")
			if tc.wantPeer {
				require.Equal(t, from.addr, repl.PreviousNodeAddr)
				require.Equal(t, structs.MigrateToken(prev.ID, from.secret), repl.MigrateToken)
			} else {
				require.Empty(t, repl.PreviousNodeAddr)
				require.Empty(t, repl.MigrateToken)
			}
			for _, a := range nodeAllocs(from) {
				require.Empty(t, a.MigrateToken, "the previous node gets no token")
			}
			_, _, err = c.Jobs().Deregister("cache", true, nil)
			require.NoError(t, err)
		})
	}
}
