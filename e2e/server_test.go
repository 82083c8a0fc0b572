package e2e

import (
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

func systemJob(id, version string) *api.Job {
	job := api.NewSystemJob(id, id, "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("server", "raw_exec").SetConfig("command", "/bin/sleep").SetConfig("args", []string{"3600"})
	task.Env = map[string]string{"VERSION": version}
	task.Resources = &api.Resources{CPU: new(100), MemoryMB: new(64)}
	job.AddTaskGroup(api.NewTaskGroup("web", 1).AddTask(task))
	return job
}

// registerNode registers a ready node through the internal client endpoint,
// as a client agent would.
func registerNode(t testing.TB, c *api.Client, name string) string {
	t.Helper()
	id := uuid.NewString()
	req := map[string]any{
		"SecretID": uuid.NewString(),
		"Node": &api.Node{
			ID: id, Name: name, Datacenter: "dc1", NodePool: "default", Status: "ready", SchedulingEligibility: "eligible",
			NodeResources: &api.NodeResources{
				Cpu:    api.NodeCpuResources{CpuShares: 4000},
				Memory: api.NodeMemoryResources{MemoryMB: 8192},
				Disk:   api.NodeDiskResources{DiskMB: 10000},
			},
			ReservedResources: &api.NodeReservedResources{},
			Drivers:           map[string]*api.DriverInfo{"raw_exec": {Detected: true, Healthy: true}},
		},
	}
	_, err := c.Raw().Write("/v1/internal/node/register", req, &map[string]any{}, nil)
	require.NoError(t, err)
	return id
}

func waitEval(t testing.TB, c *api.Client, id string) {
	t.Helper()
	require.Eventually(t, func() bool {
		e, _, err := c.Evaluations().Info(id, nil)
		return err == nil && e.Status == "complete"
	}, 30*time.Second, 50*time.Millisecond, "eval %s did not complete", id)
}

// clusterState is what a server holds, in a comparable form.
type clusterState struct {
	Jobs        []string
	Versions    map[string][]uint64
	Allocs      []string
	Evals       []string
	Deployments []string
	Nodes       []string
}

// readState reads one server's local view through its HTTP API.
func readState(t testing.TB, c *api.Client) clusterState {
	t.Helper()
	st := clusterState{Versions: map[string][]uint64{}}
	jobs, _, err := c.Jobs().List(nil)
	require.NoError(t, err)
	for _, j := range jobs {
		st.Jobs = append(st.Jobs, j.ID+"@"+j.Status)
		versions, _, _, err := c.Jobs().Versions(j.ID, false, nil)
		require.NoError(t, err)
		for _, v := range versions {
			st.Versions[j.ID] = append(st.Versions[j.ID], *v.Version)
		}
	}
	allocs, _, err := c.Allocations().List(nil)
	require.NoError(t, err)
	for _, a := range allocs {
		st.Allocs = append(st.Allocs, a.ID+"/"+a.DesiredStatus)
	}
	evals, _, err := c.Evaluations().List(nil)
	require.NoError(t, err)
	for _, e := range evals {
		st.Evals = append(st.Evals, e.ID+"/"+e.Status)
	}
	ds, _, err := c.Deployments().List(nil)
	require.NoError(t, err)
	for _, d := range ds {
		st.Deployments = append(st.Deployments, d.ID+"/"+d.Status)
	}
	nodes, _, err := c.Nodes().List(nil)
	require.NoError(t, err)
	for _, n := range nodes {
		st.Nodes = append(st.Nodes, n.ID)
	}
	for _, s := range [][]string{st.Jobs, st.Allocs, st.Evals, st.Deployments, st.Nodes} {
		sort.Strings(s)
	}
	return st
}

func dump(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

func TestServerRestartKeepsState(t *testing.T) {
	srv := newServer(t, serverSpec{name: "solo", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	registerNode(t, c, "node-a")
	registerNode(t, c, "node-b")
	for _, v := range []string{"1", "2"} {
		resp, _, err := c.Jobs().Register(systemJob("web", v), nil)
		require.NoError(t, err)
		waitEval(t, c, resp.EvalID)
	}
	before := readState(t, c)
	// Version 1 replaces one node's allocation (max_parallel = 1; nothing
	// reports health here), so three allocations exist.
	require.Len(t, before.Allocs, 3)
	require.Equal(t, []uint64{1, 0}, before.Versions["web"])

	srv.stop(t)
	srv.start(t)
	waitLeader(t, srv)
	after := readState(t, c)
	require.Equal(t, dump(before), dump(after), "a restarted server has everything it had")
}

func TestThreeServerClusterSurvivesLeaderLoss(t *testing.T) {
	type ports struct{ http, rpc int }
	var ps []ports
	var rpcAddrs []string
	for i := 0; i < 3; i++ {
		p := ports{freePort(t), freePort(t)}
		ps = append(ps, p)
		rpcAddrs = append(rpcAddrs, fmt.Sprintf("127.0.0.1:%d", p.rpc))
	}
	var servers []*agentProc
	for i, p := range ps {
		var others []string
		for j, addr := range rpcAddrs {
			if j != i {
				others = append(others, addr)
			}
		}
		spec := serverSpec{name: fmt.Sprintf("s%d", i+1), bootstrapExpect: 3, retryJoin: others}
		servers = append(servers, newServerOnPorts(t, spec, p.http, p.rpc))
	}
	leaderAddr := waitLeader(t, servers...)
	var leader *agentProc
	var followers []*agentProc
	for _, s := range servers {
		if s.rpcAddr() == leaderAddr {
			leader = s
		} else {
			followers = append(followers, s)
		}
	}
	require.NotNil(t, leader, "leader %s is one of ours", leaderAddr)

	// A write sent to a follower is forwarded to the leader.
	fc := followers[0].client(t)
	registerNode(t, fc, "node-a")
	resp, _, err := fc.Jobs().Register(systemJob("web", "1"), nil)
	require.NoError(t, err)
	waitEval(t, fc, resp.EvalID)

	leader.kill()
	newLeader := waitNewLeader(t, leaderAddr, followers...)
	require.NotEqual(t, leaderAddr, newLeader)

	// Writes go on.
	resp, _, err = followers[1].client(t).Jobs().Register(systemJob("web", "2"), nil)
	require.NoError(t, err)
	waitEval(t, followers[1].client(t), resp.EvalID)

	// The old leader comes back and catches up: all three end equal.
	leader.start(t)
	waitLeader(t, servers...)
	require.Eventually(t, func() bool {
		want := dump(readState(t, servers[0].client(t)))
		for _, s := range servers[1:] {
			if dump(readState(t, s.client(t))) != want {
				return false
			}
		}
		return true
	}, 30*time.Second, 200*time.Millisecond, "state stores converge")
	st := readState(t, servers[0].client(t))
	require.Equal(t, []uint64{1, 0}, st.Versions["web"])
	require.Len(t, st.Allocs, 2)
}
