package nomad

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// TestHeartbeatMissed_UnknownOrLost runs a single server with a short
// heartbeat TTL and a node that stops heartbeating: the allocation of a
// group with lost_after becomes unknown (still desired to run) while the
// node is disconnected, the one of a group without is lost; the node is
// down once the window ends, and the unknown allocation is then lost too.
func TestHeartbeatMissed_UnknownOrLost(t *testing.T) {
	srv, err := NewServer(Config{NodeName: "hb", DataDir: t.TempDir(), RPCAddr: "127.0.0.1:0", BootstrapExpect: 1,
		NumSchedulers: 1, MinHeartbeatTTL: 200 * time.Millisecond, HeartbeatGrace: 100 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Shutdown() })
	require.Eventually(t, srv.IsLeader, 20*time.Second, 20*time.Millisecond)

	node := &structs.Node{ID: "7d4a0b8e-0000-4000-8000-000000000001", SecretID: "7d4a0b8e-0000-4000-8000-000000000002",
		Name: "n1", Datacenter: "dc1", NodePool: "default", Status: structs.NodeStatusReady,
		SchedulingEligibility: structs.NodeSchedulingEligible,
		Attributes:            map[string]string{"kernel.name": "linux", "unique.network.ip-address": "127.0.0.1"},
		Drivers:               map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}},
		NodeResources: structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 4000},
			Memory: structs.NodeMemoryResources{MemoryMB: 4096}, Disk: structs.NodeDiskResources{DiskMB: 10_000}}}
	_, _, _, err = srv.NodeRegister(node, "")
	require.NoError(t, err)

	window := 3 * time.Second
	group := func(name string, disconnect *structs.DisconnectStrategy) *structs.TaskGroup {
		return &structs.TaskGroup{Name: name, Count: 1, Disconnect: disconnect,
			EphemeralDisk: &structs.EphemeralDisk{SizeMB: 10},
			RestartPolicy: &structs.RestartPolicy{Mode: "fail"},
			Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "/bin/sleep"},
				Resources: &structs.Resources{CPU: 10, MemoryMB: 10}, LogConfig: &structs.LogConfig{MaxFiles: 1, MaxFileSizeMB: 1}}}}
	}
	job := &structs.Job{Namespace: structs.DefaultNamespace, ID: "web", Name: "web", Type: structs.JobTypeService,
		Priority: 50, Datacenters: []string{"dc1"}, NodePool: "default",
		TaskGroups: []*structs.TaskGroup{group("windowed", &structs.DisconnectStrategy{LostAfter: &window}), group("plain", nil)}}
	job.Canonicalize()
	_, err = srv.JobRegister(&JobRegisterArgs{Job: job})
	require.NoError(t, err)

	byGroup := func() map[string]*structs.Allocation {
		allocs, err := srv.State().AllocsByJob(nil, structs.DefaultNamespace, "web", true)
		require.NoError(t, err)
		out := map[string]*structs.Allocation{}
		for _, a := range allocs {
			if a.NodeID == node.ID {
				out[a.TaskGroup] = a
			}
		}
		return out
	}
	require.Eventually(t, func() bool { return len(byGroup()) == 2 }, 10*time.Second, 20*time.Millisecond, "both placed")

	// No heartbeat: disconnected, unknown and lost as configured.
	require.Eventually(t, func() bool {
		n, err := srv.State().NodeByID(nil, node.ID)
		require.NoError(t, err)
		got := byGroup()
		return n.Status == structs.NodeStatusDisconnected &&
			got["windowed"].ClientStatus == structs.AllocClientStatusUnknown && got["windowed"].DesiredStatus == structs.AllocDesiredStatusRun &&
			got["plain"].ClientStatus == structs.AllocClientStatusLost && got["plain"].DesiredStatus == structs.AllocDesiredStatusStop
	}, 10*time.Second, 20*time.Millisecond, "node disconnected, windowed allocation unknown, plain one lost")

	// The window ends: down, and the unknown allocation is lost.
	require.Eventually(t, func() bool {
		n, err := srv.State().NodeByID(nil, node.ID)
		require.NoError(t, err)
		return n.Status == structs.NodeStatusDown && byGroup()["windowed"].ClientStatus == structs.AllocClientStatusLost
	}, 15*time.Second, 50*time.Millisecond, "node down and the windowed allocation lost after lost_after")
}
