package e2e

import (
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// disconnectGroup is a raw_exec group of one allocation with
// disconnect { lost_after = "1m", reconcile = reconcile }, preferring node
// client-a; reconcile "" leaves the disconnect block out.
func disconnectGroup(name, reconcile string) *api.TaskGroup {
	task := api.NewTask("server", "raw_exec").SetConfig("command", "/bin/sleep").SetConfig("args", []string{"3600"})
	task.Resources = &api.Resources{CPU: new(50), MemoryMB: new(32)}
	tg := api.NewTaskGroup(name, 1).AddTask(task)
	if reconcile != "" {
		tg.Disconnect = &api.DisconnectStrategy{LostAfter: new(time.Minute), Reconcile: new(reconcile)}
	}
	tg.Affinities = []*api.Affinity{{LTarget: "${node.unique.name}", Operand: "=", RTarget: "client-a", Weight: new(int8(100))}}
	return tg
}

// groupAllocs returns the allocations of group in allocs.
func groupAllocs(allocs []*api.AllocationListStub, group string) []*api.AllocationListStub {
	var out []*api.AllocationListStub
	for _, a := range allocs {
		if a.TaskGroup == group {
			out = append(out, a)
		}
	}
	return out
}

// TestDisconnectedNodeReconnects: a client cut off past its heartbeat TTL
// (its agent stopped with SIGSTOP; its tasks run on) leaves its node
// disconnected and its allocations unknown, not lost; replacements run on
// the other client. When it comes back within lost_after, each group's
// reconcile strategy keeps one of the two and stops the other:
// keep_original keeps the allocation that reconnected, keep_replacement
// the replacement. A group without a disconnect block is lost at once.
func TestDisconnectedNodeReconnects(t *testing.T) {
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1,
		extra: `min_heartbeat_ttl = "2s"
  heartbeat_grace = "1s"`})
	waitLeader(t, srv)
	c := srv.client(t)
	clientA := newClientAgent(t, "client-a", srv.httpHostPort())
	newClientAgent(t, "client-b", srv.httpHostPort())
	waitReadyNodes(t, c, 2)
	nodeA := nodeIDOf(t, c, "client-a")

	job := api.NewServiceJob("reconnect", "reconnect", "global", 50)
	job.Datacenters = []string{"dc1"}
	job.AddTaskGroup(disconnectGroup("orig", "keep_original"))
	job.AddTaskGroup(disconnectGroup("rep", "keep_replacement"))
	job.AddTaskGroup(disconnectGroup("plain", ""))
	_, _, err := c.Jobs().Register(job, nil)
	require.NoError(t, err)
	original := map[string]string{} // group → allocation ID on client-a
	require.Eventually(t, func() bool {
		for _, a := range liveAllocs(t, c, "reconnect") {
			if a.NodeID == nodeA && a.ClientStatus == "running" {
				original[a.TaskGroup] = a.ID
			}
		}
		return len(original) == 3
	}, 60*time.Second, 200*time.Millisecond, "every group running on client-a")

	// Cut client-a off: it stops heartbeating, its tasks run on.
	require.NoError(t, clientA.cmd.Process.Signal(syscall.SIGSTOP))
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = clientA.cmd.Process.Signal(syscall.SIGCONT)
		}
	})
	replacement := map[string]string{}
	require.Eventually(t, func() bool {
		node, _, err := c.Nodes().Info(nodeA, nil)
		if err != nil || node.Status != "disconnected" {
			return false
		}
		allocs, _, err := c.Jobs().Allocations("reconnect", true, nil)
		if err != nil {
			return false
		}
		for _, group := range []string{"orig", "rep", "plain"} {
			for _, a := range groupAllocs(allocs, group) {
				switch {
				case a.ID == original[group] && group == "plain":
					if a.ClientStatus != "lost" || a.DesiredStatus != "stop" {
						return false
					}
				case a.ID == original[group]:
					if a.ClientStatus != "unknown" || a.DesiredStatus != "run" {
						return false
					}
				case a.NodeID != nodeA && a.ClientStatus == "running" && a.DesiredStatus == "run":
					replacement[group] = a.ID
				}
			}
		}
		return len(replacement) == 3
	}, 60*time.Second, 200*time.Millisecond, "client-a disconnected, its allocations unknown (lost without a disconnect block) and replaced on client-b")
	for group, id := range replacement {
		a, _, err := c.Allocations().Info(id, nil)
		require.NoError(t, err)
		require.Equal(t, original[group], a.PreviousAllocation, "the replacement names the unknown allocation")
	}

	// Reconnect within lost_after.
	require.NoError(t, clientA.cmd.Process.Signal(syscall.SIGCONT))
	resumed = true
	var info map[string]*api.Allocation
	require.Eventually(t, func() bool {
		info = map[string]*api.Allocation{}
		for _, id := range []string{original["orig"], replacement["orig"], original["rep"], replacement["rep"]} {
			a, _, err := c.Allocations().Info(id, nil)
			if err != nil {
				return false
			}
			info[id] = a
		}
		return info[original["orig"]].DesiredStatus == "run" && info[original["orig"]].ClientStatus == "running" &&
			info[replacement["orig"]].DesiredStatus == "stop" &&
			info[original["rep"]].DesiredStatus == "stop" &&
			info[replacement["rep"]].DesiredStatus == "run" && info[replacement["rep"]].ClientStatus == "running"
	}, 60*time.Second, 200*time.Millisecond, "keep_original kept the reconnected allocation, keep_replacement the replacement")
	require.Equal(t, "alloc not needed due to disconnected client reconnect", info[replacement["orig"]].DesiredDescription)
	require.Equal(t, "alloc not needed due to disconnected client reconnect", info[original["rep"]].DesiredDescription)
	node, _, err := c.Nodes().Info(nodeA, nil)
	require.NoError(t, err)
	require.Equal(t, "ready", node.Status)

	// The stopped ones finish; one allocation of each group runs.
	require.Eventually(t, func() bool {
		live := liveAllocs(t, c, "reconnect")
		if plain, _, err := c.Allocations().Info(original["plain"], nil); err != nil || plain.DesiredStatus != "stop" {
			return false
		}
		running := 0
		for _, a := range live {
			if a.ClientStatus == "running" {
				running++
			}
		}
		stoppedOrig, _, err1 := c.Allocations().Info(replacement["orig"], nil)
		stoppedRep, _, err2 := c.Allocations().Info(original["rep"], nil)
		return err1 == nil && err2 == nil && running == 3 && len(live) == 3 &&
			stoppedOrig.ClientStatus == "complete" && stoppedRep.ClientStatus == "complete"
	}, 60*time.Second, 200*time.Millisecond, "the stopped allocations complete; one per group runs")
}

// TestClientCutOffStopsAllocations: a client that loses its server stops,
// on its own, the allocations of a group with stop_on_client_after once
// that long has passed; a group without it runs on.
func TestClientCutOffStopsAllocations(t *testing.T) {
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1,
		extra: `min_heartbeat_ttl = "2s"
  heartbeat_grace = "1s"`})
	waitLeader(t, srv)
	c := srv.client(t)
	client := newClientAgent(t, "client-a", srv.httpHostPort())
	waitReadyNodes(t, c, 1)

	group := func(name string, disconnect *api.DisconnectStrategy) *api.TaskGroup {
		task := api.NewTask("server", "raw_exec").SetConfig("command", "/bin/sh").
			SetConfig("args", []string{"-c", `echo $$ > "$NOMAD_TASK_DIR/pid"; exec /bin/sleep 3600`})
		task.Resources = &api.Resources{CPU: new(50), MemoryMB: new(32)}
		tg := api.NewTaskGroup(name, 1).AddTask(task)
		tg.Disconnect = disconnect
		return tg
	}
	job := api.NewServiceJob("cutoff", "cutoff", "global", 50)
	job.Datacenters = []string{"dc1"}
	job.AddTaskGroup(group("stopper", &api.DisconnectStrategy{StopOnClientAfter: new(4 * time.Second)}))
	job.AddTaskGroup(group("plain", nil))
	_, _, err := c.Jobs().Register(job, nil)
	require.NoError(t, err)
	ids := map[string]string{}
	require.Eventually(t, func() bool {
		for _, a := range liveAllocs(t, c, "cutoff") {
			if a.ClientStatus == "running" {
				ids[a.TaskGroup] = a.ID
			}
		}
		return len(ids) == 2
	}, 60*time.Second, 200*time.Millisecond, "both groups running")
	stopperPID, plainPID := taskPID(t, client, ids["stopper"]), taskPID(t, client, ids["plain"])

	srv.stop(t)
	cut := time.Now()
	var stoppedAt time.Time
	require.Eventually(t, func() bool {
		if processAlive(stopperPID) {
			return false
		}
		stoppedAt = time.Now()
		return true
	}, 30*time.Second, 50*time.Millisecond, "the stop_on_client_after group's task stops without its server")
	// The last answered heartbeat came at most one heartbeat interval
	// (half the TTL: at most 2s here) before the server stopped.
	require.GreaterOrEqual(t, stoppedAt.Sub(cut), 2*time.Second, "not before stop_on_client_after")
	require.True(t, processAlive(plainPID), "a group without stop_on_client_after runs on")
}
